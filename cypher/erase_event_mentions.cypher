// erase_event_mentions: the context events of a namespace whose detail names an id (a UUID),
// the ones an erase may have to rewrite.
// params: $ns: string, $pattern: string (a Java regex matching a whole detail that holds a UUID)
// returns: key (the run's key), seq, detail
MATCH (r:Run)-[:HAD_EVENT]->(e:ContextEvent)
WHERE r.namespace = $ns AND e.detail =~ $pattern
RETURN r.key AS key, e.seq AS seq, e.detail AS detail
ORDER BY key, seq
