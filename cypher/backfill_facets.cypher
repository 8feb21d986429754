// backfill_facets: count the facets (kind, tag, source, day, recorded, valid) of one namespace
// whose NamespaceStat does not say they are kept at version 2 (made before graphsvc kept them,
// or by a bulk import), once, under its lock (every write that changes them locks it).
// params: $sep: string (U+001F, as bump_facet_stats)
// returns: namespace, facets (FacetStats made)
// Run at store open until it returns no row. A day is the UTC date of occurredAt, else
// recordedAt; recorded, of recordedAt; valid, of the validity's start (validFrom, else
// occurredAt, else recordedAt) and end (validUntil), as graphsvc.store.base.memory_facets.
MATCH (s:NamespaceStat)
WHERE coalesce(s.facets, 0) <> 2  // unset, true (version 1) or another version
WITH s
LIMIT 1
SET s.backfilling = true  // the lock, taken before anything is counted
WITH s
CALL (s) {
  MATCH (f:FacetStat) WHERE f.namespace = s.namespace
  DELETE f
}
CALL (s) {
  MATCH (m:Memory) WHERE m.namespace = s.namespace
  UNWIND [['kind', m.kind], ['day', toString(date(coalesce(m.occurredAt, m.recordedAt)))],
          ['recorded', toString(date(m.recordedAt))],
          ['valid', toString(date(coalesce(m.validFrom, m.occurredAt, m.recordedAt)))]]
         + CASE WHEN m.validUntil IS NULL THEN []
                ELSE [['valid', toString(date(m.validUntil))]] END
         + [tag IN coalesce(m.tags, []) | ['tag', tag]]
         + CASE WHEN m.source IS NULL THEN [] ELSE [['source', m.source]] END AS pair
  WITH m, pair[0] AS facet, pair[1] AS value
  WHERE value IS NOT NULL
  WITH facet, value, count(DISTINCT m) AS n
  CREATE (:FacetStat {key: s.namespace + $sep + facet + $sep + value, namespace: s.namespace,
                      facet: facet, value: value, count: n})
  RETURN count(*) AS facets
}
SET s.facets = 2
REMOVE s.backfilling
RETURN s.namespace AS namespace, facets
