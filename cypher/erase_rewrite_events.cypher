// erase_rewrite_events: put new details (erased memory ids replaced) on some context events.
// params: $rows: list<{key: string (the run's key), seq: int, detail: string}>
// returns: rewritten (count)
UNWIND $rows AS row
MATCH (:Run {key: row.key})-[:HAD_EVENT]->(e:ContextEvent)
WHERE e.seq = row.seq
SET e.detail = row.detail
RETURN count(e) AS rewritten
