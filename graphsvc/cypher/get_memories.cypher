// get_memories: memories of a namespace by id.
// params: $ns: string, $ids: list<string>
// returns: memory (map of Memory properties)
UNWIND $ids AS id
MATCH (m:Memory {id: id})
WHERE m.namespace = $ns
RETURN properties(m) AS memory
