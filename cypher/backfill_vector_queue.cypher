// backfill_vector_queue: put a page of the memories of a namespace whose NamespaceStat does not
// say its vector queue is kept (written before graphsvc kept one) in the queue: each memory
// without a vector gets vectorQueuedUs. Pages go by id from $after; the last page marks the
// NamespaceStat (vectorQueue = true), and writes keep the queue from then on. The NamespaceStat
// is locked for the page, as every write that stores or clears vectors locks it. Run at store
// open for each namespace queue_unkept_namespaces.cypher names, until done.
// params: $ns: string, $after: string ("" to start), $page: int
// returns: marked (memories put in the queue), last (the page's last id), done (bool); no row
//          when the namespace's queue is kept already
MATCH (s:NamespaceStat {namespace: $ns})
WHERE s.vectorQueue IS NULL
SET s.backfilling = true  // the lock, taken before any memory is read
WITH s
CALL (s) {
  MATCH (m:Memory)
  WHERE m.namespace = s.namespace AND m.id > $after
  WITH m
  ORDER BY m.id
  LIMIT $page
  WITH collect(m) AS page
  CALL (page) {
    UNWIND page AS m
    WITH m
    WHERE m.vectorDimension IS NULL AND m.vectorQueuedUs IS NULL
    SET m.vectorQueuedUs = m.recordedUs
    RETURN count(m) AS marked
  }
  RETURN marked, size(page) AS seen, CASE WHEN size(page) > 0 THEN page[-1].id END AS last
}
SET s.vectorQueue = CASE WHEN seen < $page THEN true END
REMOVE s.backfilling
RETURN marked, last, seen < $page AS done
