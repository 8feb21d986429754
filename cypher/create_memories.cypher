// create_memories: create new memories (the caller checked that none of the ids exists). Each
// waits for its vector (vectorQueuedUs, the vector queue) until one is stored.
// params: $ns: string, $rows: list<map> (Memory properties, termText included, times as epoch
//         microseconds: recordedUs, occurredUs, validFromUs, validUntilUs)
// returns: created (count)
// The DateTime copies (recordedAt, occurredAt, validFrom, validUntil: what people and Cypher read) are made here from
// the microseconds: a Python datetime costs the driver far more to send than an integer.
UNWIND $rows AS row
WITH row, (row.recordedUs % 1000000 + 1000000) % 1000000 AS recorded,
     (row.occurredUs % 1000000 + 1000000) % 1000000 AS occurred,
     (row.validFromUs % 1000000 + 1000000) % 1000000 AS since,
     (row.validUntilUs % 1000000 + 1000000) % 1000000 AS until
CREATE (m:Memory)
SET m = row, m.namespace = $ns, m.vectorQueuedUs = row.recordedUs,
    m.recordedAt = datetime.fromepoch((row.recordedUs - recorded) / 1000000, recorded * 1000),
    m.occurredAt = CASE WHEN row.occurredUs IS NOT NULL
                     THEN datetime.fromepoch((row.occurredUs - occurred) / 1000000, occurred * 1000)
                   END,
    m.validFrom = CASE WHEN row.validFromUs IS NOT NULL
                    THEN datetime.fromepoch((row.validFromUs - since) / 1000000, since * 1000)
                  END,
    m.validUntil = CASE WHEN row.validUntilUs IS NOT NULL
                     THEN datetime.fromepoch((row.validUntilUs - until) / 1000000, until * 1000)
                   END
RETURN count(m) AS created
