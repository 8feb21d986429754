// recall_columns: a query's term statistics and its candidates, column-wise, in one round trip.
// params: $ns: string, $sep: string (U+001F, as in TermStat keys), $terms: list<string>
//         (distinct, sorted as Python sorts strings: the plan's tie order), $limit: int,
//         $chunk: int (terms per full-text query), $none: int (stands for a missing occurredUs),
//         $needles: list<string> (' ' + term + ' ' for each of $terms, in the same order)
// returns: modelId, dimension (the namespace's vector model, which a hybrid bundle needs before
//          it can fuse; null: none), vectors (memories with a vector), memories, totalLength, known (list<[i, df]>: df of
//          $terms[i], rarest first), chosen (list<string>), fallback (string or null), and the
//          candidates as columns, entry j of
//          each column being candidate j (in no order): ids, tf (list<list<int>>: the frequency
//          of each of $terms in the memory's analysed terms), lengths, recorded (recordedUs),
//          occurred (occurredUs, $none when missing), confidence; and ahead (list<map>, as
//          window.cypher's memories): the $guess.size best candidates by the ranking's score,
//          read ahead of the window ([] when $guess.size is 0)
//         $guess: map: size (int, 0: read nothing ahead), and with size > 0 the ranking's
//         settings (graphsvc.store.base.WindowGuess): mult (list<int>: how often each of $terms
//         is in the query), k1, b, coverageB, coverage, bm25, freshness, confidence, keep
//         (1 - freshness - confidence), halfLife (days), dayUs (microseconds in a day)
//         $asOf: map or null: {us: int (the instant, epoch microseconds), known: bool}: only
//         what a read as of then sees (graphsvc.validity: KNOWN, recordedUs <= us; VALID, the
//         start, validFromUs else occurredUs else recordedUs, <= us < validUntilUs, and no
//         memory that SUPERSEDES it started by then); null: everything
//         (KNOWN: and the SUPERSEDES links of the memories read ahead written by then)
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
// The guess scores the candidates as graphsvc.recall.rank_columns does (IDF-weighted coverage
// and BM25 over the most a memory could earn, W * (k1 + 1); freshness from the newest
// candidate's day, confidence), in the server's arithmetic:
// the client's ranking decides, and the window reads what the guess missed, so a guess that
// orders the last few differently costs a round trip, never a different answer.
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
    WITH node
    WHERE ($asOf IS NULL OR CASE WHEN $asOf.known THEN node.recordedUs <= $asOf.us
      ELSE coalesce(node.validFromUs, node.occurredUs, node.recordedUs) <= $asOf.us
           AND (node.validUntilUs IS NULL OR node.validUntilUs > $asOf.us)
           AND NOT EXISTS { MATCH (n:Memory)-[:SUPERSEDES]->(node)
                            WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $asOf.us }
      END)
    RETURN DISTINCT node
    UNION ALL
    WITH fallback
    WHERE fallback IS NOT NULL
    CALL db.index.fulltext.queryNodes('memory_terms',
      '+namespace:"' + $ns + '" +termText:(' + fallback + ')') YIELD node
    WITH node
    WHERE ($asOf IS NULL OR CASE WHEN $asOf.known THEN node.recordedUs <= $asOf.us
      ELSE coalesce(node.validFromUs, node.occurredUs, node.recordedUs) <= $asOf.us
           AND (node.validUntilUs IS NULL OR node.validUntilUs > $asOf.us)
           AND NOT EXISTS { MATCH (n:Memory)-[:SUPERSEDES]->(node)
                            WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $asOf.us }
      END)
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
  WITH node, tf, CASE WHEN $guess.size > 0
                      THEN coalesce(node.occurredUs, node.recordedUs) / $guess.dayUs END AS day
  RETURN collect(node) AS nodes, collect(day) AS days, max(day) AS newest,
         collect(node.id) AS ids, collect(tf) AS tf, collect(node.length) AS lengths,
         collect(node.recordedUs) AS recorded,
         collect(coalesce(node.occurredUs, $none)) AS occurred,
         collect(node.confidence) AS confidence
}
CALL (s, known, nodes, days, newest, ids, tf, lengths, recorded, confidence) {
  WITH s, known, nodes, days, newest, ids, tf, lengths, recorded, confidence, $guess AS g,
       toFloat(coalesce(s.memories, 0)) AS n
  WHERE g.size > 0 AND size(nodes) > 0
  WITH nodes, days, newest, ids, tf, lengths, recorded, confidence, g,
       CASE WHEN n > 0 THEN coalesce(s.totalLength, 0) / n ELSE 1.0 END AS avg,
       [j IN range(0, size($terms) - 1) |
        g.mult[j] * reduce(w = 0.0, k IN known |
          CASE WHEN k[0] = j AND k[1] > 0 THEN log(1.0 + (n - k[1] + 0.5) / (k[1] + 0.5))
               ELSE w END)] AS weights
  WITH nodes, days, newest, ids, tf, lengths, recorded, confidence, g, avg, weights,
       reduce(t = 0.0, w IN weights | t + w) AS total
  WHERE total > 0
  UNWIND range(0, size(nodes) - 1) AS i
  WITH nodes, ids, recorded, i, g, weights, total, tf[i] AS f, lengths[i] / avg AS rel,
       g.k1 * (1.0 - g.b + g.b * lengths[i] / avg) AS norm, newest - days[i] AS age,
       confidence[i] AS sure
  WITH nodes, ids, recorded, i, g, total, rel, age, sure,
       reduce(a = [0.0, 0.0], j IN range(0, size(weights) - 1) |
         CASE WHEN f[j] > 0
              THEN [a[0] + weights[j], a[1] + weights[j] * f[j] * (g.k1 + 1.0) / (f[j] + norm)]
              ELSE a END) AS hit
  WHERE hit[0] > 0
  WITH nodes, ids, recorded, i, g, age, sure,
       hit[0] / total * CASE WHEN g.coverageB > 0 AND 1.0 - g.coverageB + g.coverageB * rel > 1.0
                             THEN 1.0 / (1.0 - g.coverageB + g.coverageB * rel) ELSE 1.0 END
         AS coverage,
       hit[1] / (total * (g.k1 + 1.0)) AS bm
  WITH nodes, ids, recorded, i,
       (g.coverage * coverage + g.bm25 * bm) / (g.coverage + g.bm25)
       * (g.keep + g.freshness * 0.5 ^ (toFloat(age) / g.halfLife) + g.confidence * sure) AS score
  ORDER BY score DESC, recorded[i] DESC, ids[i]
  LIMIT $guess.size
  WITH nodes[i] AS m
  RETURN collect(m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
                    .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs,
                    supersedes: [(m)-[r:SUPERSEDES]->(o:Memory)
                                WHERE o.namespace = $ns
                                  AND ($asOf IS NULL OR NOT $asOf.known
                                       OR r.createdUs <= $asOf.us) | o.id]})
         AS ahead
}
RETURN ahead, v.modelId AS modelId, v.dimension AS dimension, coalesce(s.vectors, 0) AS vectors,
       coalesce(s.memories, 0) AS memories,
       coalesce(s.totalLength, 0) AS totalLength, known, chosen, fallback, ids, tf, lengths,
       recorded, occurred, confidence
