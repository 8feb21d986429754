// memory_ids: which of some ids are memories of a namespace (existence checks, no properties).
// params: $ns: string, $ids: list<string>
// returns: id
UNWIND $ids AS id
MATCH (m:Memory {namespace: $ns, id: id})
RETURN m.id AS id
