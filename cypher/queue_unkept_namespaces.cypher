// queue_unkept_namespaces: the namespaces whose NamespaceStat does not say their vector queue is
// kept (written before graphsvc kept one): backfill_vector_queue.cypher fills theirs.
// params: none
// returns: namespace
MATCH (s:NamespaceStat)
WHERE s.vectorQueue IS NULL
RETURN s.namespace AS namespace
ORDER BY namespace
