// links_touching: every link touching one of some memories.
// params: $ns: string, $ids: list<string>
// returns: links (list<{source, target, kind, weight, createdUs, createdAt, note}>: createdUs in
//          epoch microseconds, null on links made before it was kept, which have only createdAt)
UNWIND $ids AS mid
MATCH (m:Memory {namespace: $ns, id: mid})-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(:Memory)
WITH DISTINCT r
RETURN collect({source: startNode(r).id, target: endNode(r).id, kind: type(r), weight: r.weight,
                createdUs: r.createdUs,
                createdAt: CASE WHEN r.createdUs IS NULL THEN r.createdAt END,
                note: r.note}) AS links
