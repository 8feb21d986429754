// namespace_stats: counts for one namespace, read from its NamespaceStat (every write keeps them)
// and its runs (each run's lastSeq counts its events). The caller counts afresh
// (namespace_counted_stats) when a count is null.
// params: $ns: string
// returns: memories, links, beliefs, terms (null where not kept yet), events
OPTIONAL MATCH (s:NamespaceStat {namespace: $ns})
CALL () {
  MATCH (r:Run) WHERE r.namespace = $ns
  RETURN coalesce(sum(r.lastSeq + 1), 0) AS events
}
RETURN coalesce(s.memories, 0) AS memories, CASE WHEN s IS NULL THEN 0 ELSE s.links END AS links,
       CASE WHEN s IS NULL THEN 0 ELSE s.beliefs END AS beliefs,
       CASE WHEN s IS NULL THEN 0 ELSE s.terms END AS terms, events
