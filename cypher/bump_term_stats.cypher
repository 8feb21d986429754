// bump_term_stats: add deltas to document frequencies; a TermStat that reaches 0 is deleted.
// Terms come sorted, so concurrent writers lock TermStats in the same order; parallel lists
// cost the driver less than a map per term.
// params: $ns: string, $sep: string (U+001F: a TermStat's key is namespace + sep + term),
//         $terms: list<string> (sorted, distinct), $deltas: list<int> (one per term, not 0)
// returns: nothing
UNWIND range(0, size($terms) - 1) AS i
MERGE (t:TermStat {key: $ns + $sep + $terms[i]})
  ON CREATE SET t.namespace = $ns, t.term = $terms[i], t.df = $deltas[i]
  ON MATCH SET t.df = t.df + $deltas[i]
WITH t
WHERE t.df <= 0
DELETE t
