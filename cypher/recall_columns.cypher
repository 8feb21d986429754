// recall_columns: a query's term statistics and its candidates, column-wise, in one round trip.
// params: $ns: string, $sep: string (U+001F, as in TermStat keys), $terms: list<string>
//         (distinct, sorted as Python sorts strings: the plan's tie order), $limit: int,
//         $chunk: int (terms per full-text query), $none: int (stands for a missing occurredUs),
//         $needles: list<string> (' ' + term + ' ' for each of $terms, in the same order)
// returns: modelId, dimension (the namespace's vector model, which a hybrid bundle needs before
//          it can fuse; null: none), memories, totalLength, known (list<[i, df]>: df of
//          $terms[i], rarest first), chosen (list<string>), fallback (string or null), and the
//          candidates as columns, entry j of
//          each column being candidate j (in no order): ids, tf (list<list<int>>: the frequency
//          of each of $terms in the memory's analysed terms), lengths, recorded (recordedUs),
//          occurred (occurredUs, $none when missing), confidence
// Exact N, total length and df of the query terms; the plan of graphsvc.recall.plan_candidates
// (terms rarest first, then in the order of $terms, while the summed df stays within $limit;
// when even the rarest known term is over it, the $limit newest memories containing it); and the
// candidates it names, as candidates.cypher and recent_candidates.cypher find them. Term
// frequencies are counted here, so only numbers cross Bolt: in ' t1  t2  t3 ' (each analysed
// term between spaces of its own) the occurrences of ' t ' do not overlap, and their count is
// one less than the parts split() cuts the string into at them (split keeps empty parts); the
// needles come built, and a candidate is split only at the terms it contains (most contain one
// or two of them: CONTAINS makes no new strings, split does). The full-text
// queries are built here from analysed terms (letters and digits) and a namespace
// ([A-Za-z0-9_-]): nothing in them needs escaping. The index's namespace field is one exact token
// (the store checks how the index is made when it opens), so what `+namespace:"ns"` finds is the
// namespace's own: no namespace property is read to check it.
OPTIONAL MATCH (s:NamespaceStat {namespace: $ns})
OPTIONAL MATCH (v:VectorModel {namespace: $ns})
CALL () {
  UNWIND range(0, size($terms) - 1) AS i
  OPTIONAL MATCH (t:TermStat {key: $ns + $sep + $terms[i]})
  WITH i, coalesce(t.df, 0) AS df
  ORDER BY df, i
  RETURN collect([i, df]) AS known
}
WITH s, v, known, [k IN known WHERE k[1] > 0] AS present
WITH s, v, known, present,
     reduce(plan = {total: 0, chosen: []}, k IN present |
       CASE WHEN plan.total + k[1] > $limit THEN plan
            ELSE {total: plan.total + k[1], chosen: plan.chosen + [$terms[k[0]]]} END
     ).chosen AS chosen
WITH s, v, known, chosen,
     CASE WHEN size(chosen) = 0 AND size(present) > 0 THEN $terms[present[0][0]] END AS fallback
CALL (chosen, fallback) {
  CALL (chosen, fallback) {
    UNWIND range(0, size(chosen) - 1, $chunk) AS start
    WITH chosen[start..start + $chunk] AS part
    WHERE size(part) > 0 AND fallback IS NULL // range(0, -1, n) is [0]
    CALL db.index.fulltext.queryNodes('memory_terms',
      '+namespace:"' + $ns + '" +termText:(' + reduce(q = '', t IN part | q + ' ' + t) + ')')
      YIELD node
    RETURN DISTINCT node
    UNION ALL
    WITH fallback
    WHERE fallback IS NOT NULL
    CALL db.index.fulltext.queryNodes('memory_terms',
      '+namespace:"' + $ns + '" +termText:(' + fallback + ')') YIELD node
    WITH node
    ORDER BY node.recordedUs DESC, node.id
    LIMIT $limit
    RETURN node
  }
  WITH node, ' ' + replace(node.termSeq, ' ', '  ') + ' ' AS spaced
  WITH node,
       CASE
         WHEN spaced IS NULL THEN [t IN $terms | size([w IN coalesce(node.terms, []) WHERE w = t])]
         ELSE [needle IN $needles |
               CASE WHEN spaced CONTAINS needle THEN size(split(spaced, needle)) - 1 ELSE 0 END]
       END AS tf
  RETURN collect(node.id) AS ids, collect(tf) AS tf, collect(node.length) AS lengths,
         collect(node.recordedUs) AS recorded,
         collect(coalesce(node.occurredUs, $none)) AS occurred,
         collect(node.confidence) AS confidence
}
RETURN v.modelId AS modelId, v.dimension AS dimension, coalesce(s.memories, 0) AS memories,
       coalesce(s.totalLength, 0) AS totalLength, known, chosen, fallback, ids, tf, lengths,
       recorded, occurred, confidence
