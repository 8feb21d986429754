// existing_memories: memories with these ids, in any namespace (ids are globally unique).
// params: $ids: list<string>
// returns: namespace, memory (map of Memory properties)
UNWIND $ids AS id
MATCH (m:Memory {id: id})
RETURN m.namespace AS namespace, properties(m) AS memory
