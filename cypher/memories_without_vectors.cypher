// memories_without_vectors: a page of a namespace's memories that have no vector, by id
// ascending from a cursor (keyset pagination through the (namespace, id) index).
// params: $ns: string, $after: string ("" for the first page), $limit: int
// returns: memory (map of Memory properties, times as epoch microseconds)
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.id > $after AND m.vectorDimension IS NULL
RETURN m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
          .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs} AS memory
ORDER BY m.namespace, m.id
LIMIT $limit
