// vector_dimensions: the dimensions of every namespace's vector model (each needs its index).
// params: none
// returns: dimension
MATCH (v:VectorModel)
WHERE v.dimension IS NOT NULL
RETURN DISTINCT v.dimension AS dimension
ORDER BY dimension
