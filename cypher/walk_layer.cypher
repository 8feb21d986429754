// walk_layer: one breadth-first hop over every link kind, both directions, from a frontier;
// memories already seen are skipped (cycle-safe). Sorted by id and cut to $limit.
// params: $ns: string, $frontier: list<string>, $seen: list<string>, $limit: int
// returns: id
UNWIND $frontier AS fid
MATCH (a:Memory {namespace: $ns, id: fid})-[:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
WHERE b.namespace = $ns AND NOT b.id IN $seen
RETURN DISTINCT b.id AS id
ORDER BY id
LIMIT $limit
