// namespaces: every namespace that holds at least one memory.
// params: none
// returns: namespace
MATCH (s:NamespaceStat)
WHERE s.memories > 0
RETURN s.namespace AS namespace
ORDER BY namespace
