// bump_namespace_stat: add to the live memory count, total analysed length and vector count of a
// namespace.
// params: $ns: string, $memories: int, $length: int, $vectors: int
// returns: memories, totalLength, vectors (after the change)
MERGE (s:NamespaceStat {namespace: $ns})
  ON CREATE SET s.memories = 0, s.totalLength = 0
SET s.memories = s.memories + $memories, s.totalLength = s.totalLength + $length,
    s.vectors = coalesce(s.vectors, 0) + $vectors
RETURN s.memories AS memories, s.totalLength AS totalLength, s.vectors AS vectors
