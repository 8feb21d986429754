// store_vectors: put vectors (int8 codes, stored as float32 by setNodeVectorProperty) on
// memories of a namespace; ids not in the namespace are skipped, and a memory that gets one
// leaves the vector queue. The caller holds lock_vector_state and bumps NamespaceStat.vectors by
// `added`.
// params: $ns: string, $rows: list<{id: string, codes: list<int>}>, $property: string
//         (vector_<d>), $dimension: int, $replace: bool (false: only memories without a vector)
// returns: stored (memories that got a vector), added (of those, how many had none)
UNWIND $rows AS row
MATCH (m:Memory {namespace: $ns, id: row.id})
WITH m, row, m.vectorDimension IS NULL AS added
WHERE $replace OR added
CALL db.create.setNodeVectorProperty(m, $property, row.codes)
SET m.vectorDimension = $dimension, m.vectorQueuedUs = null
RETURN count(m) AS stored, sum(CASE WHEN added THEN 1 ELSE 0 END) AS added
