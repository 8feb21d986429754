// get_belief: a belief with its source and context ids in rank order.
// params: $ns: string, $id: string
// returns: belief (map), sources (list<string>), context (list<string>)
MATCH (b:Belief {id: $id})
WHERE b.namespace = $ns
CALL (b) {
  OPTIONAL MATCH (b)-[d:DERIVED_FROM]->(m:Memory)
  WITH m, d ORDER BY d.rank
  RETURN collect(m.id) AS sources
}
CALL (b) {
  OPTIONAL MATCH (b)-[u:USED_CONTEXT]->(m:Memory)
  WITH m, u ORDER BY u.rank
  RETURN collect(m.id) AS context
}
RETURN properties(b) AS belief, sources, context
