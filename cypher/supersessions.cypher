// supersessions: SUPERSEDES links with both ends among some memories.
// params: $ns: string, $ids: list<string>
// returns: newer, older
MATCH (a:Memory)-[:SUPERSEDES]->(b:Memory)
WHERE a.id IN $ids AND b.id IN $ids AND a.namespace = $ns AND b.namespace = $ns
RETURN DISTINCT a.id AS newer, b.id AS older
ORDER BY newer, older
