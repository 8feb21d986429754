// erase_events: remove up to $limit context events of a namespace (erasing everything).
// params: $ns: string, $limit: int
// returns: removed (count)
MATCH (e:ContextEvent)
WHERE e.namespace = $ns
WITH e
LIMIT $limit
DETACH DELETE e
RETURN count(*) AS removed
