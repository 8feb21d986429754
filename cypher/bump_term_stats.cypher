// bump_term_stats: add deltas to document frequencies; a TermStat that reaches 0 is deleted.
// Terms come sorted, so concurrent writers lock TermStats in the same order; parallel lists
// cost the driver less than a map per term.
// params: $ns: string, $sep: string (U+001F: a TermStat's key is namespace + sep + term),
//         $terms: list<string> (sorted, distinct), $deltas: list<int> (one per term, not 0)
// returns: terms (TermStats made less TermStats deleted: a TermStat at df 0 never stays, so one
//          whose df is its delta after the change was just made)
UNWIND range(0, size($terms) - 1) AS i
MERGE (t:TermStat {key: $ns + $sep + $terms[i]})
  ON CREATE SET t.namespace = $ns, t.term = $terms[i], t.df = $deltas[i]
  ON MATCH SET t.df = t.df + $deltas[i]
WITH t, t.df = $deltas[i] AS made, t.df <= 0 AS gone
FOREACH (_ IN CASE WHEN gone THEN [1] ELSE [] END | DELETE t)
RETURN coalesce(sum(CASE WHEN made AND NOT gone THEN 1 WHEN gone AND NOT made THEN -1 ELSE 0 END), 0)
         AS terms
