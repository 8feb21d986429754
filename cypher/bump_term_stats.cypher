// bump_term_stats: add deltas to document frequencies; a TermStat that reaches 0 is deleted.
// Rows are sorted by key so concurrent writers lock TermStats in the same order.
// params: $ns: string, $deltas: list<{key: string, term: string, delta: int}>
// returns: touched (count)
UNWIND $deltas AS d
MERGE (t:TermStat {key: d.key})
  ON CREATE SET t.namespace = $ns, t.term = d.term, t.df = 0
SET t.df = t.df + d.delta
WITH t
CALL (t) {
  WITH t WHERE t.df <= 0
  DELETE t
}
RETURN count(*) AS touched
