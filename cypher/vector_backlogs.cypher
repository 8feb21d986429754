// vector_backlogs: every namespace whose memories outnumber its vectors (memories that wait for
// one), from the NamespaceStats alone (one per namespace), with its vector model.
// params: none
// returns: namespace, memories, vectors, modelId, dimension (null: no model)
MATCH (s:NamespaceStat)
WHERE s.memories > coalesce(s.vectors, 0)
OPTIONAL MATCH (v:VectorModel {namespace: s.namespace})
RETURN s.namespace AS namespace, s.memories AS memories, coalesce(s.vectors, 0) AS vectors,
       v.modelId AS modelId, v.dimension AS dimension
ORDER BY namespace
