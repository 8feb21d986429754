// erase_statistics: remove up to $limit statistics nodes of a namespace: its TermStats and
// FacetStats (none are left once its memories are gone: one at 0 is deleted), then its NamespaceStat
// (erasing everything, last).
// params: $ns: string, $limit: int
// returns: removed (count)
CALL () {
  MATCH (t:TermStat)
  WHERE t.namespace = $ns
  RETURN t AS node
  LIMIT $limit
UNION
  MATCH (f:FacetStat)
  WHERE f.namespace = $ns
  RETURN f AS node
  LIMIT $limit
UNION
  MATCH (s:NamespaceStat {namespace: $ns})
  RETURN s AS node
}
WITH node
LIMIT $limit
DELETE node
RETURN count(*) AS removed
