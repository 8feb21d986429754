// namespace_counted_stats: a namespace's link, belief and term counts, counted by reading them
// all (it grows with the namespace): only for a NamespaceStat whose counts are not kept yet.
// params: $ns: string
// returns: links, beliefs, terms
CALL () {
  MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(:Memory)
  WHERE a.namespace = $ns
  RETURN count(r) AS links
}
CALL () {
  MATCH (b:Belief) WHERE b.namespace = $ns
  RETURN count(b) AS beliefs
}
CALL () {
  MATCH (t:TermStat) WHERE t.namespace = $ns
  RETURN count(t) AS terms
}
RETURN links, beliefs, terms
