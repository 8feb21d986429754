// list_memories: a page of a namespace's memories, newest first (keyset pagination), filtered.
// params: $ns: string, $after: datetime or null, $afterId: string, $limit: int,
//         $kind: string or null, $tag: string or null, $since: datetime or null,
//         $until: datetime or null
// returns: memory (map of Memory properties without the vector, times as epoch
//          microseconds)
// Ordered by the index's own key (namespace, recordedAt), so the plan stops after $limit rows
// instead of sorting the whole namespace (PartialTop, not Top).
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.recordedAt IS NOT NULL
  AND ($after IS NULL OR m.recordedAt < $after OR (m.recordedAt = $after AND m.id < $afterId))
  AND ($kind IS NULL OR m.kind = $kind)
  AND ($tag IS NULL OR $tag IN m.tags)
  AND ($since IS NULL OR coalesce(m.occurredAt, m.recordedAt) >= $since)
  AND ($until IS NULL OR coalesce(m.occurredAt, m.recordedAt) < $until)
RETURN m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
          .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs} AS memory
ORDER BY m.namespace DESC, m.recordedAt DESC, m.id DESC
LIMIT $limit
