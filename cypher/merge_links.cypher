// merge_links: create links between memories of one namespace, or update weight and note of an
// existing link of the same kind (its createdAt stays). The type comes from an allowlisted kind.
// params: $ns: string, $links: list<{source, target, kind, weight, note, createdUs}> (createdUs:
//         epoch microseconds; the DateTime createdAt is made here, as in create_memories)
// returns: merged (links whose two ends exist: fewer than sent means an end is missing, and the
//          caller rolls back), created (links this write made, each once: MERGE locks both
//          ends, so of concurrent writes of one new link only one makes it; `made` is set on
//          it for this count and removed in the same statement)
UNWIND $links AS l
MATCH (a:Memory {namespace: $ns, id: l.source})
MATCH (b:Memory {namespace: $ns, id: l.target})
WITH a, b, l, (l.createdUs % 1000000 + 1000000) % 1000000 AS micros
WITH a, b, l, datetime.fromepoch((l.createdUs - micros) / 1000000, micros * 1000) AS createdAt
CALL (a, b, l, createdAt) {
  WITH * WHERE l.kind = 'CAUSES'
  MERGE (a)-[r:CAUSES]->(b)
    ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs, r.made = true
  SET r.weight = l.weight, r.note = l.note
  RETURN r
UNION ALL
  WITH * WHERE l.kind = 'PRECEDES'
  MERGE (a)-[r:PRECEDES]->(b)
    ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs, r.made = true
  SET r.weight = l.weight, r.note = l.note
  RETURN r
UNION ALL
  WITH * WHERE l.kind = 'RELATES_TO'
  MERGE (a)-[r:RELATES_TO]->(b)
    ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs, r.made = true
  SET r.weight = l.weight, r.note = l.note
  RETURN r
UNION ALL
  WITH * WHERE l.kind = 'SUPERSEDES'
  MERGE (a)-[r:SUPERSEDES]->(b)
    ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs, r.made = true
  SET r.weight = l.weight, r.note = l.note
  RETURN r
}
WITH r, r.made IS NOT NULL AS made
REMOVE r.made
RETURN count(*) AS merged, count(DISTINCT CASE WHEN made THEN r END) AS created
