// links_touching: every link touching one of some memories.
// params: $ns: string, $ids: list<string>
// returns: source, target, kind, weight, createdAt, note
UNWIND $ids AS mid
MATCH (m:Memory {namespace: $ns, id: mid})-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(:Memory)
WITH DISTINCT r
RETURN startNode(r).id AS source, endNode(r).id AS target, type(r) AS kind, r.weight AS weight,
       r.createdAt AS createdAt, r.note AS note
