// set_vector_model: declare (or, with nulls, withdraw) the model of a namespace's vectors. The
// caller holds lock_vector_state and checked that no vector of another model is stored.
// params: $ns: string, $modelId: string or null, $dimension: int or null
// returns: modelId, dimension
MERGE (v:VectorModel {namespace: $ns})
SET v.modelId = $modelId, v.dimension = $dimension
RETURN v.modelId AS modelId, v.dimension AS dimension
