// save_belief: a Belief with DERIVED_FROM its sources and USED_CONTEXT its linked memories (each
// with its rank, so the lists come back in order). Fails the batch if a memory is missing.
// params: $ns: string, $belief: map, $sources: list<string>, $context: list<string>
// returns: linked (count of memories found)
CREATE (b:Belief)
SET b = $belief, b.namespace = $ns
WITH b
CALL (b) {
  UNWIND range(0, size($sources) - 1) AS i
  MATCH (m:Memory {namespace: $ns, id: $sources[i]})
  CREATE (b)-[:DERIVED_FROM {rank: i}]->(m)
  RETURN count(m) AS sources
}
CALL (b) {
  UNWIND range(0, size($context) - 1) AS i
  MATCH (m:Memory {namespace: $ns, id: $context[i]})
  CREATE (b)-[:USED_CONTEXT {rank: i}]->(m)
  RETURN count(m) AS context
}
RETURN sources + context AS linked
