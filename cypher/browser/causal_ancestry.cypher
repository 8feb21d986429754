// Causal ancestry of a memory: everything that led to it over CAUSES, up to 4 hops, as a graph.
// In Neo4j Browser first set the parameters, e.g.
//   :param ns => 'default'
//   :param id => '00000000-0000-4000-8000-000000000008'
MATCH (m:Memory {id: $id})
WHERE m.namespace = $ns
OPTIONAL MATCH path = (cause:Memory)-[:CAUSES*1..4]->(m)
WHERE cause.namespace = $ns
RETURN m, path
