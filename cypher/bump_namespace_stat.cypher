// bump_namespace_stat: add to the live memory count and total analysed length of a namespace.
// params: $ns: string, $memories: int, $length: int
// returns: memories, totalLength (after the change)
MERGE (s:NamespaceStat {namespace: $ns})
  ON CREATE SET s.memories = 0, s.totalLength = 0
SET s.memories = s.memories + $memories, s.totalLength = s.totalLength + $length
RETURN s.memories AS memories, s.totalLength AS totalLength
