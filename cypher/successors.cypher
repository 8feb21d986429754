// successors: the memories that SUPERSEDE each of some memories, with their starts (what closes
// those memories' validity: graphsvc.validity.validities).
// params: $ns: string, $ids: list<string>, $asOf: map or null ({us, known}: with known, only the
//         links written by then, createdUs <= us, from memories recorded by then)
// returns: older, newer, startUs (the newer memory's validFromUs, else occurredUs, else
//          recordedUs), ordered by older, newer
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})<-[r:SUPERSEDES]-(n:Memory)
WHERE n.namespace = $ns
  AND ($asOf IS NULL OR NOT $asOf.known OR (r.createdUs <= $asOf.us AND n.recordedUs <= $asOf.us))
RETURN DISTINCT m.id AS older, n.id AS newer,
       coalesce(n.validFromUs, n.occurredUs, n.recordedUs) AS startUs
ORDER BY older, newer
