// forget_receipt: what forgetting a memory removes: its links and the beliefs built on it.
// params: $ns: string, $id: string
// returns: memory (map of Memory properties without the vector), links (list<{source, target,
//          kind}>), beliefs (list<string>)
MATCH (m:Memory {namespace: $ns, id: $id})
OPTIONAL MATCH (m)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(:Memory)
WITH m, collect(DISTINCT {source: startNode(r).id, target: endNode(r).id, kind: type(r)}) AS links
OPTIONAL MATCH (b:Belief)-[:DERIVED_FROM|USED_CONTEXT]->(m)
RETURN m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
          .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs} AS memory, links, collect(DISTINCT b.id) AS beliefs
