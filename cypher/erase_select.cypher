// erase_select: the next batch of an erase: up to $limit memories of the namespace matching the
// filter, oldest first from a cursor, with each one's terms and the links and beliefs going too.
// params: $ns: string, $after: datetime (the previous batch's newest recordedAt, or the minimum),
//         $limit: int, $tag, $source: string or null, $since, $until: datetime or null
// returns: memories (list<{id, terms (termSeq, or the list on older memories), recordedAt, kind,
//          tags, source, day (UTC date of occurredAt, else recordedAt), recordedDay, validDays
//          (the UTC dates its validity starts and ends: graphsvc.store.base.memory_facets)}>,
//          oldest first), links,
//          beliefs (counts)
// Every filter given must hold (null: not given); since <= coalesce(occurredAt, recordedAt) < until.
// The batch before was deleted, so `recordedAt >= $after` repeats nothing, and ordering by the
// index's own key (namespace, recordedAt) lets the plan stop at $limit matches: a batch reads
// what it removes plus what the filter skips, not the whole namespace.
MATCH (m:Memory)
WHERE m.namespace = $ns AND m.recordedAt >= $after
  AND ($tag IS NULL OR $tag IN m.tags)
  AND ($source IS NULL OR m.source = $source)
  AND ($since IS NULL OR coalesce(m.occurredAt, m.recordedAt) >= $since)
  AND ($until IS NULL OR coalesce(m.occurredAt, m.recordedAt) < $until)
WITH m
ORDER BY m.namespace, m.recordedAt
LIMIT $limit
WITH collect(m) AS batch
CALL (batch) {
  UNWIND batch AS m
  OPTIONAL MATCH (m)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(:Memory)
  RETURN count(DISTINCT r) AS links
}
CALL (batch) {
  UNWIND batch AS m
  OPTIONAL MATCH (b:Belief)-[:DERIVED_FROM|USED_CONTEXT]->(m)
  RETURN count(DISTINCT b) AS beliefs
}
RETURN [m IN batch | {id: m.id, terms: coalesce(m.termSeq, m.terms), recordedAt: m.recordedAt,
                     kind: m.kind, tags: coalesce(m.tags, []), source: m.source,
                     day: toString(date(coalesce(m.occurredAt, m.recordedAt))),
                     recordedDay: toString(date(m.recordedAt)),
                     validDays: [d IN [coalesce(m.validFrom, m.occurredAt, m.recordedAt),
                                       m.validUntil] WHERE d IS NOT NULL | toString(date(d))]}]
         AS memories, links, beliefs
