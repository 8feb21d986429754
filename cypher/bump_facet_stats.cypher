// bump_facet_stats: add deltas to how many memories of a namespace have each kind, tag, source and
// day (graphsvc.store.base.FACETS); a FacetStat that reaches 0 is deleted. Pairs come sorted, so
// concurrent writers lock FacetStats in the same order (after the TermStats, before the
// NamespaceStat).
// params: $ns: string, $sep: string (U+001F: a FacetStat's key is namespace + sep + facet + sep +
//         value), $facets, $values: list<string>, $deltas: list<int> (parallel, not 0)
// returns: changed (count)
UNWIND range(0, size($facets) - 1) AS i
MERGE (f:FacetStat {key: $ns + $sep + $facets[i] + $sep + $values[i]})
  ON CREATE SET f.namespace = $ns, f.facet = $facets[i], f.value = $values[i], f.count = $deltas[i]
  ON MATCH SET f.count = f.count + $deltas[i]
WITH f, f.count <= 0 AS gone
FOREACH (_ IN CASE WHEN gone THEN [1] ELSE [] END | DELETE f)
RETURN count(*) AS changed
