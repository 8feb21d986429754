// window: the ranked window of a query in one round trip: its memories (times as epoch
// microseconds), each with the ids of the memories it SUPERSEDES.
// params: $ns: string, $ids: list<string>, $asOf: map or null ({us, known}: with known, only
//         the SUPERSEDES links written by then, createdUs <= us)
// returns: memories (list<map>: the memory's properties and supersedes, list<string>)
// The store keeps the SUPERSEDES links whose both ends are in $ids: reading each window memory's
// own outgoing links costs a few relationship reads, where matching the links among $ids as a
// pattern of its own cost a second plan branch.
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
RETURN collect(m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
                  .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs,
                  supersedes: [(m)-[r:SUPERSEDES]->(o:Memory)
                              WHERE o.namespace = $ns
                                AND ($asOf IS NULL OR NOT $asOf.known OR r.createdUs <= $asOf.us)
                              | o.id]})
       AS memories
