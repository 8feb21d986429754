// postings: every memory of the namespace containing one of the terms, through the full-text index.
// params: $query: string (Lucene: +namespace:"ns" +termText:(t1 t2 ...); terms are [letters/digits])
//         $ns: string
// returns: memory (map of Memory properties)
CALL db.index.fulltext.queryNodes('memory_terms', $query) YIELD node
WHERE node.namespace = $ns
RETURN properties(node) AS memory
ORDER BY node.id
