// existing_memories: the namespace's memories with these ids (ids are per namespace: another
// namespace may hold the same id, and that changes nothing here).
// params: $ns: string, $ids: list<string>
// returns: memories (list<map of Memory properties without the vector, times as epoch
//          microseconds>; ids the namespace does not hold are left out)
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
RETURN collect(m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
                  .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs}) AS memories
