// append_event: record a context event at the end of a run; seq counts from 0 per run. The Run
// node is locked by the SET, so concurrent appends get distinct seqs.
// params: $ns: string, $key: string (namespace + U+001F + run id), $runId: string, $event: map
// returns: seq
MERGE (r:Run {key: $key})
  ON CREATE SET r.namespace = $ns, r.id = $runId, r.lastSeq = -1
SET r.lastSeq = r.lastSeq + 1
CREATE (r)-[:HAD_EVENT]->(e:ContextEvent)
SET e = $event, e.namespace = $ns, e.runId = $runId, e.seq = r.lastSeq
RETURN e.seq AS seq
