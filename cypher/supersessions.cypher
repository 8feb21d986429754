// supersessions: SUPERSEDES links with both ends among some memories.
// params: $ns: string, $ids: list<string>, $asOf: map or null ({us, known}: with known, only
//         the links written by then, createdUs <= us)
// returns: newer, older
MATCH (a:Memory)-[r:SUPERSEDES]->(b:Memory)
WHERE a.id IN $ids AND b.id IN $ids AND a.namespace = $ns AND b.namespace = $ns
  AND ($asOf IS NULL OR NOT $asOf.known OR r.createdUs <= $asOf.us)
RETURN DISTINCT a.id AS newer, b.id AS older
ORDER BY newer, older
