// term_stats: exact N, total length and df of some terms in a namespace.
// params: $ns: string, $keys: list<string> (namespace + U+001F + term)
// returns: memories, totalLength, df (list<{key, df}>)
OPTIONAL MATCH (s:NamespaceStat {namespace: $ns})
CALL (s) {
  UNWIND $keys AS key
  OPTIONAL MATCH (t:TermStat {key: key})
  RETURN collect({key: key, df: coalesce(t.df, 0)}) AS df
}
RETURN coalesce(s.memories, 0) AS memories, coalesce(s.totalLength, 0) AS totalLength, df
