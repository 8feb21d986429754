// recent_candidates: the newest memories containing one term (when even the rarest query term is
// common), as candidates (see candidates.cypher).
// params: $query: string (Lucene, as in candidates: it names the namespace), $limit: int
// returns: rows (list<[id, terms, length, recordedUs, occurredUs, confidence]>, by recordedUs
//          descending then id)
CALL db.index.fulltext.queryNodes('memory_terms', $query) YIELD node
WITH node
ORDER BY node.recordedUs DESC, node.id
LIMIT $limit
RETURN collect([node.id, coalesce(node.termSeq, node.terms), node.length, node.recordedUs,
                node.occurredUs, node.confidence]) AS rows
