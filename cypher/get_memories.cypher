// get_memories: memories of a namespace by id (times as epoch microseconds, the fast form).
// params: $ns: string, $ids: list<string>
// returns: memories (list<map of Memory properties, without termText and the DateTime copies>;
//          unknown ids are left out)
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
RETURN collect(m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
                  .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs}) AS memories
