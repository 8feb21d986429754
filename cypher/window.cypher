// window: the ranked window of a query in one round trip: its memories (times as epoch
// microseconds) and the SUPERSEDES links among them.
// params: $ns: string, $ids: list<string>
// returns: memories (list<map>), supersessions (list<{newer, older}>)
CALL () {
  UNWIND $ids AS id
  MATCH (m:Memory {namespace: $ns, id: id})
  RETURN collect(m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
                    .recordedUs, .occurredUs, .invalidatedAt}) AS memories
}
CALL () {
  MATCH (a:Memory)-[:SUPERSEDES]->(b:Memory)
  WHERE a.id IN $ids AND b.id IN $ids AND a.namespace = $ns AND b.namespace = $ns
  RETURN collect(DISTINCT {newer: a.id, older: b.id}) AS supersessions
}
RETURN memories, supersessions
