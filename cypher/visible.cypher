// visible: which of some memories a read as of an instant sees (graphsvc.validity.visible).
// params: $ns: string, $ids: list<string>, $asOf: map {us: int (epoch microseconds), known: bool}
//         (KNOWN: recordedUs <= us; VALID: the start, validFromUs else occurredUs else
//         recordedUs, <= us < validUntilUs, and no memory that SUPERSEDES it started by then)
// returns: ids (list<string>, in no order; unknown ids left out)
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
WHERE ($asOf IS NULL OR CASE WHEN $asOf.known THEN m.recordedUs <= $asOf.us
  ELSE coalesce(m.validFromUs, m.occurredUs, m.recordedUs) <= $asOf.us
       AND (m.validUntilUs IS NULL OR m.validUntilUs > $asOf.us)
       AND NOT EXISTS { MATCH (n:Memory)-[:SUPERSEDES]->(m)
                        WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $asOf.us }
  END)
RETURN collect(m.id) AS ids
