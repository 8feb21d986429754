// merge_links: create links between memories of one namespace, or update weight and note of an
// existing link of the same kind (its createdAt stays). The type comes from an allowlisted kind.
// params: $ns: string, $links: list<{source, target, kind, weight, note, createdUs}> (createdUs:
//         epoch microseconds; the DateTime createdAt is made here, as in create_memories)
// returns: merged (links whose two ends exist: fewer than sent means an end is missing, and the
//          caller rolls back)
UNWIND $links AS l
MATCH (a:Memory {namespace: $ns, id: l.source})
MATCH (b:Memory {namespace: $ns, id: l.target})
WITH a, b, l, (l.createdUs % 1000000 + 1000000) % 1000000 AS micros
WITH a, b, l, datetime.fromepoch((l.createdUs - micros) / 1000000, micros * 1000) AS createdAt
FOREACH (_ IN CASE WHEN l.kind = 'CAUSES' THEN [1] ELSE [] END |
  MERGE (a)-[r:CAUSES]->(b) ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs
  SET r.weight = l.weight, r.note = l.note)
FOREACH (_ IN CASE WHEN l.kind = 'PRECEDES' THEN [1] ELSE [] END |
  MERGE (a)-[r:PRECEDES]->(b) ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs
  SET r.weight = l.weight, r.note = l.note)
FOREACH (_ IN CASE WHEN l.kind = 'RELATES_TO' THEN [1] ELSE [] END |
  MERGE (a)-[r:RELATES_TO]->(b) ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs
  SET r.weight = l.weight, r.note = l.note)
FOREACH (_ IN CASE WHEN l.kind = 'SUPERSEDES' THEN [1] ELSE [] END |
  MERGE (a)-[r:SUPERSEDES]->(b) ON CREATE SET r.createdAt = createdAt, r.createdUs = l.createdUs
  SET r.weight = l.weight, r.note = l.note)
RETURN count(*) AS merged
