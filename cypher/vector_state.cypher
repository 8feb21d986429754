// vector_state: a namespace's vector model and how many of its memories have a vector.
// params: $ns: string
// returns: modelId, dimension (null: no model), vectors (count)
OPTIONAL MATCH (v:VectorModel {namespace: $ns})
OPTIONAL MATCH (s:NamespaceStat {namespace: $ns})
RETURN v.modelId AS modelId, v.dimension AS dimension, coalesce(s.vectors, 0) AS vectors
