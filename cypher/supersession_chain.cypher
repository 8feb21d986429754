// supersession_chain: the memories joined to one by SUPERSEDES links, either way, any number of
// hops up to 16 (graphsvc.store.base.HISTORY_HOPS; the memory included), and the SUPERSEDES links among them: a fact's history.
// params: $ns: string, $id: string, $max: int (members at most: the nearest, then by id)
// returns: memories (list<map>, as get_memories), links (list<{source, target, kind, weight,
//          createdUs, createdAt, note}>, as walk.cypher); no row when the memory is not stored
MATCH (m:Memory {namespace: $ns, id: $id})
OPTIONAL MATCH p = (m)-[:SUPERSEDES*1..16]-(o:Memory)
WITH m, o, min(length(p)) AS hops
ORDER BY hops, o.id
WITH m, [x IN collect(o) WHERE x IS NOT NULL][0..$max - 1] AS others
WITH [m] + others AS members
CALL (members) {
  UNWIND members AS a
  MATCH (a)-[r:SUPERSEDES]->(b:Memory)
  WHERE b IN members
  RETURN collect({source: a.id, target: b.id, kind: type(r), weight: r.weight,
                  createdUs: r.createdUs,
                  createdAt: CASE WHEN r.createdUs IS NULL THEN r.createdAt END,
                  note: r.note}) AS links
}
RETURN [x IN members | x {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
                          .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs}]
       AS memories, links
