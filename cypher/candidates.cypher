// candidates: every memory of the namespace containing one of some terms, found through the
// full-text index, with what scoring needs (the analysed terms, length, times, confidence); the
// store counts the query terms' frequencies. One row: records one by one cost the driver more
// than the query.
// params: $query: string (Lucene: +namespace:"ns" +termText:(t1 t2 ...); terms are [letters/digits];
//         the namespace is one exact token of the index: see recall_columns.cypher)
// returns: rows (list<[id, terms, length, recordedUs, occurredUs, confidence]>, in no order;
//          terms: termSeq, the analysed terms space-separated, or the list on older memories)
CALL db.index.fulltext.queryNodes('memory_terms', $query) YIELD node
RETURN collect([node.id, coalesce(node.termSeq, node.terms), node.length, node.recordedUs,
                node.occurredUs, node.confidence]) AS rows
