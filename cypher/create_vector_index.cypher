// create_vector_index: the vector index of one dimension, shared by every namespace whose model
// has that dimension (created when the first such model is set, and at open for every model).
// params: $name: string (memory_vector_<d>), $dimension: int
// returns: nothing (a schema command)
// spliced: {dimension}, the same integer, in the property name `vector_<d>` (an index's property
// is an identifier, which Cypher does not take as a parameter; the store splices only integers).
// Vectors are int8 codes held as float32; quantization stays off so the index ranks them by
// their exact float cosine.
CREATE VECTOR INDEX $name IF NOT EXISTS FOR (m:Memory) ON m.vector_{dimension}
OPTIONS {indexConfig: {
  `vector.dimensions`: $dimension,
  `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: false
}}
