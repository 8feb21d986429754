// export_links: every link of a namespace.
// params: $ns: string
// returns: source, target, kind, weight, createdUs, createdAt (as in links_touching), note
MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(b:Memory)
WHERE a.namespace = $ns
RETURN a.id AS source, b.id AS target, type(r) AS kind, r.weight AS weight,
       r.createdUs AS createdUs, CASE WHEN r.createdUs IS NULL THEN r.createdAt END AS createdAt,
       r.note AS note
ORDER BY source, target, kind
