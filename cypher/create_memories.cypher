// create_memories: create new memories (the caller checked that none of the ids exists).
// params: $ns: string, $rows: list<map> (Memory properties, termText included)
// returns: created (count)
UNWIND $rows AS row
CREATE (m:Memory)
SET m = row, m.namespace = $ns
RETURN count(m) AS created
