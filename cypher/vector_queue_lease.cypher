// vector_queue_lease: who holds the lease on the vector queue, and for how long yet.
// params: none
// returns: owner (null: nobody), leftMs (milliseconds before it lapses; <= 0: lapsed)
OPTIONAL MATCH (l:QueueLease {queue: 'vectors'})
RETURN l.owner AS owner, l.untilMs - timestamp() AS leftMs
