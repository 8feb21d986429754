// delete_memories: remove memories with their links and the beliefs that derived from or used
// them (a memory's vector is a property: it goes with the node). The caller adjusts term
// statistics and the vector count.
// params: $ns: string, $ids: list<string>
// returns: deleted (count), vectors (how many of them had a vector)
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
OPTIONAL MATCH (b:Belief)-[:DERIVED_FROM|USED_CONTEXT]->(m)
WITH m, m.vectorDimension IS NOT NULL AS vectored, collect(DISTINCT b) AS beliefs
FOREACH (b IN beliefs | DETACH DELETE b)
DETACH DELETE m
RETURN count(*) AS deleted, sum(CASE WHEN vectored THEN 1 ELSE 0 END) AS vectors
