// bump_namespace_stat: add to the live memory count, total analysed length, vector count, and
// the link, belief and term counts of a namespace. A count that is null (a NamespaceStat made
// before graphsvc kept it, or by a bulk import) stays null until backfill_counts sets it. A
// NamespaceStat made here keeps its facets and its vector queue from the start (facets = 2,
// vectorQueue = true; see backfill_facets and backfill_vector_queue).
// params: $ns: string, $memories: int, $length: int, $vectors: int, $links: int, $beliefs: int,
//         $terms: int
// returns: memories, totalLength, vectors (after the change)
MERGE (s:NamespaceStat {namespace: $ns})
  ON CREATE SET s.memories = 0, s.totalLength = 0, s.links = 0, s.beliefs = 0, s.terms = 0,
                s.facets = 2, s.vectorQueue = true
SET s.memories = s.memories + $memories, s.totalLength = s.totalLength + $length,
    s.vectors = coalesce(s.vectors, 0) + $vectors, s.links = s.links + $links,
    s.beliefs = s.beliefs + $beliefs, s.terms = s.terms + $terms
RETURN s.memories AS memories, s.totalLength AS totalLength, s.vectors AS vectors
