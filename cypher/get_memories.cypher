// get_memories: memories of a namespace by id (times as epoch microseconds, the fast form).
// params: $ns: string, $ids: list<string>
// returns: memory (map of Memory properties, without termText and the DateTime copies)
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
RETURN m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .recordedUs,
          .occurredUs, .invalidatedAt} AS memory
