// candidates: every memory of the namespace containing one of some terms, found through the
// full-text index, with what scoring needs (term frequencies of the query terms, length, times,
// confidence) computed here, so no text leaves the database for candidates.
// params: $query: string (Lucene: +namespace:"ns" +termText:(t1 t2 ...); terms are [letters/digits])
//         $ns: string, $terms: list<string> (the query terms to count)
// returns: id, tf (list<int>, one per $terms), length, recordedUs, occurredUs (epoch
//          microseconds), confidence
CALL db.index.fulltext.queryNodes('memory_terms', $query) YIELD node
WHERE node.namespace = $ns
RETURN node.id AS id,
       [t IN $terms | size([x IN node.terms WHERE x = t])] AS tf,
       node.length AS length, node.recordedUs AS recordedUs, node.occurredUs AS occurredUs,
       node.confidence AS confidence
ORDER BY id
