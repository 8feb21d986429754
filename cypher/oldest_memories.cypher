// oldest_memories: the oldest memories of a namespace, in eviction order, skipping some ids.
// params: $ns: string, $skip: list<string> (memories the current write re-sends), $limit: int
// returns: memory (map of Memory properties)
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.recordedAt IS NOT NULL AND NOT m.id IN $skip
RETURN properties(m) AS memory
ORDER BY m.recordedAt, m.id
LIMIT $limit
