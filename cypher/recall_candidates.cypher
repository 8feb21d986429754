// recall_candidates: a query's term statistics and its candidates, in one round trip.
// params: $ns: string, $sep: string (U+001F, as in TermStat keys), $terms: list<string>
//         (distinct, sorted as Python sorts strings: the plan's tie order), $limit: int,
//         $chunk: int (terms per full-text query)
// returns: memories, totalLength, known (list<[i, df]>: df of $terms[i], rarest first), chosen
//          (list<string>), fallback (string or null), rows (candidates of chosen, in no order),
//          recent (candidates of fallback, newest first); each candidate [id, terms, length,
//          recordedUs, occurredUs, confidence] (terms: termSeq, or the list on older memories)
// Exact N, total length and df of the query terms; the plan of graphsvc.recall.plan_candidates
// (terms rarest first, then in the order of $terms, while the summed df stays within $limit;
// when even the rarest known term is over it, the $limit newest memories containing it); and the
// candidates it names, as candidates.cypher and recent_candidates.cypher give them. The
// full-text queries are built here from analysed terms (letters and digits) and a namespace
// ([A-Za-z0-9_-]): nothing in them needs escaping.
OPTIONAL MATCH (s:NamespaceStat {namespace: $ns})
CALL () {
  UNWIND range(0, size($terms) - 1) AS i
  OPTIONAL MATCH (t:TermStat {key: $ns + $sep + $terms[i]})
  WITH i, coalesce(t.df, 0) AS df
  ORDER BY df, i
  RETURN collect([i, df]) AS known
}
WITH s, known, [k IN known WHERE k[1] > 0] AS present
WITH s, known, present,
     reduce(plan = {total: 0, chosen: []}, k IN present |
       CASE WHEN plan.total + k[1] > $limit THEN plan
            ELSE {total: plan.total + k[1], chosen: plan.chosen + [$terms[k[0]]]} END
     ).chosen AS chosen
WITH s, known, chosen,
     CASE WHEN size(chosen) = 0 AND size(present) > 0 THEN $terms[present[0][0]] END AS fallback
CALL (chosen) {
  UNWIND range(0, size(chosen) - 1, $chunk) AS start
  WITH chosen[start..start + $chunk] AS part
  WHERE size(part) > 0 // range(0, -1, n) is [0]
  CALL db.index.fulltext.queryNodes('memory_terms',
    '+namespace:"' + $ns + '" +termText:(' + reduce(q = '', t IN part | q + ' ' + t) + ')')
    YIELD node
  WHERE node.namespace = $ns
  WITH DISTINCT node
  RETURN collect([node.id, coalesce(node.termSeq, node.terms), node.length, node.recordedUs,
                  node.occurredUs, node.confidence]) AS rows
}
CALL (fallback) {
  WITH fallback
  WHERE fallback IS NOT NULL
  CALL db.index.fulltext.queryNodes('memory_terms',
    '+namespace:"' + $ns + '" +termText:(' + fallback + ')') YIELD node
  WHERE node.namespace = $ns
  WITH node
  ORDER BY node.recordedUs DESC, node.id
  LIMIT $limit
  RETURN collect([node.id, coalesce(node.termSeq, node.terms), node.length, node.recordedUs,
                  node.occurredUs, node.confidence]) AS recent
}
RETURN coalesce(s.memories, 0) AS memories, coalesce(s.totalLength, 0) AS totalLength, known,
       chosen, fallback, rows, recent
