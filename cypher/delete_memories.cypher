// delete_memories: remove memories with their links and the beliefs that derived from or used
// them. The caller adjusts term statistics.
// params: $ns: string, $ids: list<string>
// returns: deleted (count)
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
OPTIONAL MATCH (b:Belief)-[:DERIVED_FROM|USED_CONTEXT]->(m)
WITH m, collect(DISTINCT b) AS beliefs
FOREACH (b IN beliefs | DETACH DELETE b)
DETACH DELETE m
RETURN count(*) AS deleted
