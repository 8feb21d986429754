// oldest_memories: the oldest memories of a namespace, in eviction order.
// params: $ns: string, $limit: int
// returns: memory (map of Memory properties)
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.recordedAt IS NOT NULL
RETURN properties(m) AS memory
ORDER BY m.recordedAt, m.id
LIMIT $limit
