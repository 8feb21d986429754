// oldest_memories: the oldest memories of a namespace, in eviction order, skipping some ids.
// params: $ns: string, $skip: list<string> (memories the current write re-sends), $limit: int
// returns: memory (map of Memory properties without the vector, times as epoch
//          microseconds)
// Ordered by the index's own key (namespace, recordedAt), so the plan stops after $limit rows
// instead of sorting the whole namespace (PartialTop, not Top).
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.recordedAt IS NOT NULL AND NOT m.id IN $skip
RETURN m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
          .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs} AS memory
ORDER BY m.namespace, m.recordedAt, m.id
LIMIT $limit
