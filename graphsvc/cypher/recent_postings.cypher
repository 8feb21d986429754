// recent_postings: the newest memories containing one term (when even the rarest term is common).
// params: $query: string (Lucene, as in postings), $ns: string, $limit: int
// returns: memory (map of Memory properties)
CALL db.index.fulltext.queryNodes('memory_terms', $query) YIELD node
WHERE node.namespace = $ns
RETURN properties(node) AS memory
ORDER BY node.recordedAt DESC, node.id
LIMIT $limit
