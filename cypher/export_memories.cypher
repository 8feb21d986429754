// export_memories: a page of a namespace's memories, oldest first (keyset pagination).
// params: $ns: string, $after: datetime or null, $afterId: string, $limit: int
// returns: memory (map of Memory properties without the vector, times as epoch
//          microseconds)
// Ordered by the index's own key (namespace, recordedAt), so the plan stops after $limit rows
// instead of sorting the whole namespace (PartialTop, not Top).
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.recordedAt IS NOT NULL
  AND ($after IS NULL OR m.recordedAt > $after OR (m.recordedAt = $after AND m.id > $afterId))
RETURN m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
          .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs} AS memory
ORDER BY m.namespace, m.recordedAt, m.id
LIMIT $limit
