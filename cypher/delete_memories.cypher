// delete_memories: remove memories with their links and the beliefs that derived from or used
// them (a memory's vector is a property: it goes with the node). The caller adjusts term
// statistics, the vector count and the namespace's link and belief counts.
// params: $ns: string, $ids: list<string> (distinct)
// returns: deleted (count), vectors (how many of them had a vector), links, beliefs (how many
//          went with them, each once: counted before anything is deleted)
// (Two subqueries, not one: a memory's links times its beliefs would be the rows of one.)
CALL () {
  UNWIND $ids AS id
  MATCH (m:Memory {namespace: $ns, id: id})
  OPTIONAL MATCH (m)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(:Memory)
  RETURN count(DISTINCT r) AS links
}
CALL () {
  UNWIND $ids AS id
  MATCH (m:Memory {namespace: $ns, id: id})
  OPTIONAL MATCH (b:Belief)-[:DERIVED_FROM|USED_CONTEXT]->(m)
  RETURN count(DISTINCT b) AS beliefs
}
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
OPTIONAL MATCH (b:Belief)-[:DERIVED_FROM|USED_CONTEXT]->(m)
WITH links, beliefs, m, m.vectorDimension IS NOT NULL AS vectored, collect(DISTINCT b) AS gone
FOREACH (b IN gone | DETACH DELETE b)
DETACH DELETE m
RETURN count(*) AS deleted, sum(CASE WHEN vectored THEN 1 ELSE 0 END) AS vectors,
       coalesce(max(links), 0) AS links, coalesce(max(beliefs), 0) AS beliefs
