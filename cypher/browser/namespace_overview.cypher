// A namespace at a glance: memories by kind, links by type, beliefs, runs and the newest
// memories. (It counts the whole namespace: an exploration for people, not a request path.)
//   :param ns => 'default'
CALL () {
  MATCH (m:Memory) WHERE m.namespace = $ns
  WITH m.kind AS kind, count(*) AS n ORDER BY n DESC
  RETURN collect(kind + ': ' + n) AS memoriesByKind
}
CALL () {
  MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(:Memory) WHERE a.namespace = $ns
  WITH type(r) AS type, count(*) AS n ORDER BY n DESC
  RETURN collect(type + ': ' + n) AS linksByType
}
CALL () {
  MATCH (b:Belief) WHERE b.namespace = $ns
  RETURN count(b) AS beliefs
}
CALL () {
  MATCH (r:Run) WHERE r.namespace = $ns
  RETURN count(r) AS runs
}
CALL () {
  MATCH (m:Memory) WHERE m.namespace = $ns
  WITH m ORDER BY m.recordedAt DESC LIMIT 5
  RETURN collect(m.text) AS newest
}
RETURN memoriesByKind, linksByType, beliefs, runs, newest
