// supersedes_cycle: the first of some memories that now lies on a SUPERSEDES cycle (checked
// after new links are merged, in the same transaction, which is then rolled back). Chains are
// followed up to 64 hops.
// params: $ns: string, $ids: list<string> (sources of the new SUPERSEDES links, in link order)
// returns: id
UNWIND $ids AS id
MATCH (a:Memory {namespace: $ns, id: id})
WHERE EXISTS { (a)-[:SUPERSEDES]->{1,64}(a) }
RETURN a.id AS id
LIMIT 1
