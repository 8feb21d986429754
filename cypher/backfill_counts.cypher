// backfill_counts: set the link, belief and term counts of one NamespaceStat that has none (made
// before graphsvc kept them, or by a bulk import), counted once under its lock: every write that
// changes them locks the NamespaceStat, so the counts are exact when this commits. Run at store
// open until it returns no row.
// params: none
// returns: namespace, links, beliefs, terms (of the NamespaceStat set)
MATCH (s:NamespaceStat)
WHERE s.links IS NULL OR s.beliefs IS NULL OR s.terms IS NULL
WITH s
LIMIT 1
SET s.backfilling = true  // the lock, taken before anything is counted
WITH s
CALL (s) {
  MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(:Memory)
  WHERE a.namespace = s.namespace
  RETURN count(r) AS links
}
CALL (s) {
  MATCH (b:Belief) WHERE b.namespace = s.namespace
  RETURN count(b) AS beliefs
}
CALL (s) {
  MATCH (t:TermStat) WHERE t.namespace = s.namespace
  RETURN count(t) AS terms
}
SET s.links = links, s.beliefs = beliefs, s.terms = terms
REMOVE s.backfilling
RETURN s.namespace AS namespace, links, beliefs, terms
