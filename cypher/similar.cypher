// similar: dense candidates for a query vector and the vectors of given memories, one round trip.
// params: $ns, $dimension: int (the query's), $index: memory_vector_<d>, $property: vector_<d>,
//   $query: list<int>, $zero: bool, $mode: 'auto'|'index'|'scan'|'given', $exactBelow, $fetch, $k,
//   $margin: float, $floor: float or null, $ids: list<string>
// returns: modelId, dimension (the model's; null: none), vectors (count), mode (what ran, null:
//   no model of this dimension), indexed, scanned ({returned, least, mine, kth, hits: list<{id,
//   codes}>}), given (list<{id, codes}>)
// 'auto' asks the index when the namespace has more than $exactBelow vectors, else scans it;
// 'given' fetches only the vectors of $ids. The index spans every namespace of the dimension:
// `returned` and `least` (the lowest score) count all its rows, `mine` those of the namespace,
// `kth` the k-th best score among them (-1: fewer).
// Codes come back only for the namespace's rows scoring at least kth - $margin: the others
// cannot reach the k best. The store re-scores them exactly (graphsvc/dense.py) and asks again
// (more from the index, or a scan, with a $floor) when something better could be left out.
// Scores are Neo4j's, (1 + cosine) / 2 in float32. A vector of zeros has no cosine (the index
// skips it): the scan gives it 0.5 (cosine 0).
OPTIONAL MATCH (v:VectorModel {namespace: $ns})
OPTIONAL MATCH (s:NamespaceStat {namespace: $ns})
WITH v.modelId AS modelId, v.dimension AS dimension, coalesce(s.vectors, 0) AS vectors
WITH modelId, dimension, vectors,
     CASE
       WHEN modelId IS NULL OR dimension <> $dimension THEN null
       WHEN $mode <> 'auto' THEN $mode
       WHEN vectors > $exactBelow AND NOT $zero THEN 'index'
       ELSE 'scan'
     END AS mode
CALL (mode) {
  WITH mode
  WHERE mode = 'index'
  CALL db.index.vector.queryNodes($index, $fetch, $query) YIELD node, score
  WITH node, score
  ORDER BY score DESC
  WITH collect({node: node, score: score, mine: node.namespace = $ns}) AS rows
  WITH rows, [r IN rows WHERE r.mine] AS mine
  WITH rows, mine, CASE WHEN $k > 0 AND size(mine) >= $k THEN mine[$k - 1].score ELSE -1.0 END AS kth
  RETURN {returned: size(rows), least: rows[-1].score, mine: size(mine), kth: kth,
          hits: [r IN mine WHERE r.score >= kth - $margin |
                 {id: r.node.id, codes: r.node[$property]}]} AS indexed
}
CALL (mode) {
  // The scan's own subquery, under the filter: in one query graph with it, the planner seeks
  // every vector of the namespace first and filters on the mode afterwards, in every mode.
  WITH mode
  WHERE mode = 'scan'
  CALL () {
    MATCH (m:Memory)
    WHERE m.namespace = $ns AND m.vectorDimension = $dimension
    WITH m, m[$property] AS codes
    WITH m, codes,
         CASE
           WHEN $zero OR none(x IN codes WHERE x <> 0.0) THEN 0.5
           ELSE vector.similarity.cosine(codes, $query)
         END AS score
    WHERE $floor IS NULL OR score >= $floor
    WITH m, codes, score
    ORDER BY score DESC, m.id
    LIMIT $fetch
    RETURN m, codes, score
  }
  WITH collect({id: m.id, codes: codes, score: score}) AS rows
  WITH rows, CASE WHEN $k > 0 AND size(rows) >= $k THEN rows[$k - 1].score ELSE -1.0 END AS kth
  RETURN {returned: size(rows), least: rows[-1].score, mine: size(rows), kth: kth,
          hits: [r IN rows WHERE r.score >= kth - $margin | {id: r.id, codes: r.codes}]} AS scanned
}
CALL () {
  UNWIND $ids AS id
  MATCH (m:Memory {namespace: $ns, id: id})
  WHERE m.vectorDimension = $dimension
  RETURN collect({id: m.id, codes: m[$property]}) AS given
}
RETURN modelId, dimension, vectors, mode, indexed, scanned, given
