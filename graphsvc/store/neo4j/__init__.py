"""The Neo4j store: graphsvc's system of record.

All retrieval work happens in the database: candidates come from the ``memory_terms`` full-text
index, exact term statistics (``:TermStat`` df per term, ``:NamespaceStat`` N and total length) are
kept in the same transaction as every write and delete, as are the namespace's link, belief and
term counts that ``stats`` reads (so it reads no memory), and graph walks are bounded breadth-first
hops in Cypher. Writes are explicit transactions batched with ``UNWIND``; reads are single
auto-commit queries.

What crosses Bolt is kept cheap, because the driver's per-value and per-record costs, not the
queries, were most of the time: times travel as epoch microseconds (``recordedUs``,
``occurredUs``, a link's ``createdUs``; the DateTime copies people and Cypher read are made in
Cypher), a memory's analysed terms are one string (``termSeq``; memories written before it have
the list ``terms``, and every read takes either), term statistics are bumped from two parallel
lists, and queries that return many items return them as one row of lists. A query's term
statistics and candidates take one round trip (``recall_candidates``), a graph walk one per four
hops with what it reached.

Outages are bounded: every store call has a total time budget (``timeout``,
``GRAPHSVC_STORE_TIMEOUT``). Connection acquisition (which includes connecting) never waits past
it, and graphsvc's own retry loop (not the driver's, whose loop can run well past its nominal retry
time) retries transient failures with short backoff until the budget is spent, then raises
:class:`~graphsvc.errors.StoreUnavailableError` naming the real cause (connection refused at
host:port, timed out, authentication failed, database unavailable) and a ``retry_after`` hint. A
write that fails that way may or may not have been applied (the connection can be lost after the
server committed but before it answered, and a server shutting down has been seen to commit and
still answer "database unavailable"); it is never half-applied, and because every write is
idempotent the caller resends it with the same ids. The budget does not cut short a call that a
live server is working on (a large batch), nor one a starting or stopping server holds while it
waits for its database; a frozen server (SIGSTOP, a stalled VM), which keeps its connections
open and answers nothing, is told apart by a Bolt handshake on a new connection from shortly
before the budget (every attempt runs on a thread of its own, so the caller can stop waiting).
``ping`` makes one attempt, no retries, on a checked connection.

This package is the only code that imports ``neo4j``; driver errors become graphsvc errors at
one boundary, :mod:`~graphsvc.store.neo4j.boundary` (the drivers, the retry loop, the
translation). :mod:`~graphsvc.store.neo4j.store` holds :class:`Neo4jStore`, the store interface,
answered by one part per capability around that boundary (writes, erasure, reads, candidates,
vectors, queue; the counts every write keeps are :mod:`~graphsvc.store.neo4j.counts`), and
:mod:`~graphsvc.store.neo4j.rows` converts records to domain models.
"""

from graphsvc.store.neo4j.store import Neo4jStore

__all__ = ["Neo4jStore"]
