// erase_runs: remove up to $limit runs of a namespace (erasing everything, after their events).
// params: $ns: string, $limit: int
// returns: removed (count)
MATCH (r:Run)
WHERE r.namespace = $ns
WITH r
LIMIT $limit
DETACH DELETE r
RETURN count(*) AS removed
