// lock_vector_state: vector_state for a write that stores vectors or changes the model: the
// NamespaceStat is locked (written) first, so such writes of a namespace run one after another
// and a model never changes while another transaction stores vectors of the old one.
// params: $ns: string
// returns: modelId, dimension (null: no model), vectors (count)
MERGE (s:NamespaceStat {namespace: $ns})
  ON CREATE SET s.memories = 0, s.totalLength = 0, s.vectorQueue = true
SET s.vectors = coalesce(s.vectors, 0)
WITH s
OPTIONAL MATCH (v:VectorModel {namespace: $ns})
RETURN v.modelId AS modelId, v.dimension AS dimension, s.vectors AS vectors
