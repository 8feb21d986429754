// walk_members: what a walk reached, in one round trip: the reached memories (times as epoch
// microseconds) and every link with both ends among the walk's members.
// params: $ns: string, $reached: list<string>, $members: list<string> (starts and reached)
// returns: memories (list<map>), links (list<{source, target, kind, weight, createdAt, note}>)
CALL () {
  UNWIND $reached AS id
  MATCH (m:Memory {namespace: $ns, id: id})
  RETURN collect(m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .recordedUs,
                    .occurredUs, .invalidatedAt}) AS memories
}
CALL () {
  MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(b:Memory)
  WHERE a.id IN $members AND b.id IN $members AND a.namespace = $ns AND b.namespace = $ns
  RETURN collect({source: a.id, target: b.id, kind: type(r), weight: r.weight,
                  createdAt: r.createdAt, note: r.note}) AS links
}
RETURN memories, links
