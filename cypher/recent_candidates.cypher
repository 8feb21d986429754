// recent_candidates: the newest memories containing one term (when even the rarest query term is
// common), as candidates (see candidates.cypher).
// params: $query: string (Lucene, as in candidates), $ns: string, $limit: int,
//         $terms: list<string> (the query terms to count)
// returns: id, tf (list<int>, one per $terms), length, recordedUs, occurredUs (epoch
//          microseconds), confidence
CALL db.index.fulltext.queryNodes('memory_terms', $query) YIELD node
WHERE node.namespace = $ns
WITH node
ORDER BY node.recordedUs DESC, node.id
LIMIT $limit
RETURN node.id AS id,
       [t IN $terms | size([x IN node.terms WHERE x = t])] AS tf,
       node.length AS length, node.recordedUs AS recordedUs, node.occurredUs AS occurredUs,
       node.confidence AS confidence
