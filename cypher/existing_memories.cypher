// existing_memories: the namespace's memories with these ids (ids are per namespace: another
// namespace may hold the same id, and that changes nothing here).
// params: $ns: string, $ids: list<string>
// returns: memory (map of Memory properties without the vector, times as epoch
//          microseconds)
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
RETURN m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .recordedUs,
          .occurredUs, .invalidatedAt} AS memory
