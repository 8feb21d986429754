// facet_counts: the $top values of one facet of a namespace with the most memories (count
// descending, then value), or for 'day' the $top latest days; and how many distinct values the
// facet has. Reads the facet's FacetStats (index facet_stat_namespace), never a memory.
// params: $ns: string, $facet: string, $top: int, $byDay: boolean
// returns: distinct (int), top (list<[value, count]>, in order)
CALL () {
  MATCH (f:FacetStat) WHERE f.namespace = $ns AND f.facet = $facet
  RETURN count(f) AS distinct
}
CALL () {
  MATCH (f:FacetStat) WHERE f.namespace = $ns AND f.facet = $facet
  WITH f
  ORDER BY CASE WHEN $byDay THEN 0 ELSE -f.count END, CASE WHEN $byDay THEN f.value END DESC,
           f.value
  LIMIT $top
  RETURN collect([f.value, f.count]) AS top
}
RETURN distinct, top
