// fill_vectors: put vectors (int8 codes, stored as float32 by setNodeVectorProperty) on
// memories that wait for one: each only while it still waits (vectorQueuedUs set) and is the
// memory the queue named (same recordedUs: one forgotten and written again is another). The
// caller holds lock_vector_state, checked the model, and bumps NamespaceStat.vectors by
// `stored`.
// params: $ns: string, $rows: list<{id: string, recordedUs: int, codes: list<int>}>,
//         $property: string (vector_<d>), $dimension: int
// returns: stored (count)
UNWIND $rows AS row
MATCH (m:Memory {namespace: $ns, id: row.id})
WHERE m.vectorQueuedUs IS NOT NULL AND m.recordedUs = row.recordedUs
CALL db.create.setNodeVectorProperty(m, $property, row.codes)
SET m.vectorDimension = $dimension, m.vectorQueuedUs = null
RETURN count(m) AS stored
