// namespace_stats: counts for one namespace (an admin view: it counts links and events).
// params: $ns: string
// returns: memories, links, beliefs, terms, events
OPTIONAL MATCH (s:NamespaceStat {namespace: $ns})
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
CALL () {
  MATCH (e:ContextEvent) WHERE e.namespace = $ns
  RETURN count(e) AS events
}
RETURN coalesce(s.memories, 0) AS memories, links, beliefs, terms, events
