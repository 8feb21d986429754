// next_recorded: for each memory asked, the memory recorded right after it in its namespace: the
// least (recordedAt, id) above its own (ids compare as strings, which for canonical UUIDs is their
// numeric order, as the embedded store compares them).
// params: $ns: string, $ids: list<string> (distinct)
// returns: seed (string: the asked id), memory (map: the window's properties); one row per asked
//          id that is a memory of the namespace with a memory recorded after it, in no order
// Each branch reads the (namespace, recordedAt) index: the memories recorded at the same instant
// with a greater id, and the first instant after it (the index's own order, so the plan stops at
// one entry) with those recorded then. A batch's memories are a microsecond apart, so a branch
// reads one or two entries. The hints keep the planner off the (namespace, id) constraint's
// index, where `t.id > s.id` would be a range over half the namespace.
UNWIND $ids AS id
MATCH (s:Memory {namespace: $ns, id: id})
CALL (s) {
  MATCH (t:Memory)
  USING INDEX t:Memory(namespace, recordedAt)
  WHERE t.namespace = $ns AND t.recordedAt = s.recordedAt AND t.id > s.id
  RETURN t
  UNION
  MATCH (first:Memory)
  WHERE first.namespace = $ns AND first.recordedAt > s.recordedAt
  WITH first ORDER BY first.namespace, first.recordedAt LIMIT 1
  MATCH (t:Memory)
  USING INDEX t:Memory(namespace, recordedAt)
  WHERE t.namespace = $ns AND t.recordedAt = first.recordedAt
  RETURN t
}
WITH s, t ORDER BY t.recordedAt, t.id
WITH s, collect(t)[0] AS t
RETURN s.id AS seed,
       t {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq, .recordedUs,
          .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs} AS memory
