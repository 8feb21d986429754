// clear_vectors: remove up to $limit stored vectors of a namespace (through the
// memory_namespace_vector index) and count them off NamespaceStat.vectors; each memory then waits
// for a vector again (vectorQueuedUs: the vector queue).
// params: $ns: string, $limit: int
// returns: removed (count)
CALL () {
  MATCH (m:Memory)
  WHERE m.namespace = $ns AND m.vectorDimension IS NOT NULL
  WITH m
  LIMIT $limit
  SET m['vector_' + toString(m.vectorDimension)] = null, m.vectorDimension = null,
      m.vectorQueuedUs = m.recordedUs
  RETURN count(m) AS removed
}
MERGE (s:NamespaceStat {namespace: $ns})
  ON CREATE SET s.memories = 0, s.totalLength = 0, s.vectorQueue = true
SET s.vectors = coalesce(s.vectors, 0) - removed
RETURN removed
