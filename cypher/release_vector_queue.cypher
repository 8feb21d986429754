// release_vector_queue: give up the lease on the vector queue, if $owner holds it.
// params: $owner: string
// returns: nothing
MATCH (l:QueueLease {queue: 'vectors'})
WHERE l.owner = $owner
SET l.owner = null, l.untilMs = null
