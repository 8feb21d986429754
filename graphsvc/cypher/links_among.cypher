// links_among: every link with both ends among some memories.
// params: $ns: string, $ids: list<string>
// returns: source, target, kind, weight, createdAt, note
MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(b:Memory)
WHERE a.id IN $ids AND b.id IN $ids AND a.namespace = $ns AND b.namespace = $ns
RETURN a.id AS source, b.id AS target, type(r) AS kind, r.weight AS weight,
       r.createdAt AS createdAt, r.note AS note
