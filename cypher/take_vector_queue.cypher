// take_vector_queue: take or renew the lease on the database's vector queue: one process at a
// time drains it. The lease node is locked (written) before its holder is read, so two takers
// run one after the other; times are the database server's clock (timestamp(), milliseconds),
// so the hosts of the takers need not agree on the time.
// params: $owner: string, $ms: int (the lease's length)
// returns: held (bool: $owner holds it now), owner (who holds it)
MERGE (l:QueueLease {queue: 'vectors'})
SET l.taking = true  // the lock, taken before the holder is read
WITH l, timestamp() AS now
WITH l, now, l.owner IS NULL OR l.owner = $owner OR l.untilMs <= now AS free
SET l.owner = CASE WHEN free THEN $owner ELSE l.owner END,
    l.untilMs = CASE WHEN free THEN now + $ms ELSE l.untilMs END
REMOVE l.taking
RETURN free AS held, l.owner AS owner
