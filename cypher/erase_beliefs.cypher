// erase_beliefs: remove up to $limit beliefs of a namespace (erasing everything; beliefs go with
// their memories, so this finds only strays).
// params: $ns: string, $limit: int
// returns: removed (count)
MATCH (b:Belief)
WHERE b.namespace = $ns
WITH b
LIMIT $limit
DETACH DELETE b
RETURN count(*) AS removed
