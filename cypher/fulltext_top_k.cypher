// fulltext_top_k: the raw full-text index's own top k for some terms (Lucene BM25), the
// baseline `graphsvc bench` measures bundles against on Neo4j.
// params: $query: string (Lucene, as in candidates: it names the namespace), $k: int
// returns: id, score
CALL db.index.fulltext.queryNodes('memory_terms', $query, {limit: $k}) YIELD node, score
RETURN node.id AS id, score
