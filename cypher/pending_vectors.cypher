// pending_vectors: the head of a namespace's vector queue: memories that wait for their vector,
// oldest recorded first, read in the order of the memory_vector_queue index (vectorQueuedUs is
// set only on them) and cut at $limit there, so the work grows with the page, not with the
// backlog or the namespace (ordering by both of the index's properties lets the planner read it
// in order; memories recorded at the same microsecond come in the index's order).
// params: $ns: string, $limit: int
// returns: id, recordedUs, text (one row per memory)
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.vectorQueuedUs IS NOT NULL
RETURN m.id AS id, m.recordedUs AS recordedUs, m.text AS text
ORDER BY m.namespace, m.vectorQueuedUs
LIMIT $limit
