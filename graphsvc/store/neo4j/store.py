"""The Neo4j store: :class:`Neo4jStore` answers the :class:`~graphsvc.store.base.Store`
interface with parts it holds, one per capability, each running named queries (``cypher/``)
through the one :class:`~graphsvc.store.neo4j.boundary.Neo4jBoundary` they share:

- :class:`~graphsvc.store.neo4j.writes.Neo4jWrites`: memories, links, beliefs, context events;
- :class:`~graphsvc.store.neo4j.erasure.Neo4jErasure`: forget and erase;
- :class:`~graphsvc.store.neo4j.reads.Neo4jReads`: memories, links, validity, beliefs, runs,
  counts, and the namespaces and exports;
- :class:`~graphsvc.store.neo4j.candidates.Neo4jCandidates`: what recall reads first, lexically
  and by meaning;
- :class:`~graphsvc.store.neo4j.vectors.Neo4jVectors`: vector models and vectors;
- :class:`~graphsvc.store.neo4j.queue.Neo4jVectorQueue`: the vector queue and its lease.

The counts every write keeps in its transaction are :mod:`~graphsvc.store.neo4j.counts`."""

from __future__ import annotations

from pydantic import SecretStr

from graphsvc.errors import GraphsvcError
from graphsvc.store.base import Store, delegate
from graphsvc.store.neo4j.boundary import DEFAULT_TIMEOUT, PING_TIMEOUT, Neo4jBoundary
from graphsvc.store.neo4j.candidates import Neo4jCandidates
from graphsvc.store.neo4j.counts import backfill_counts, backfill_facets
from graphsvc.store.neo4j.erasure import Neo4jErasure
from graphsvc.store.neo4j.queue import Neo4jVectorQueue
from graphsvc.store.neo4j.reads import Neo4jReads
from graphsvc.store.neo4j.vectors import Neo4jVectors
from graphsvc.store.neo4j.writes import Neo4jWrites


class Neo4jStore(Store):
    """The store on a Neo4j server (5.26 LTS or newer).

    Args:
        uri: Bolt URI, e.g. ``bolt://127.0.0.1:7687`` or ``neo4j://host``.
        user: user name (ignored when ``password`` is empty: no authentication).
        password: the password, kept secret in logs and reprs.
        database: database name (Community has one user database, ``neo4j``).
        timeout: the outage budget of one store call, in seconds (``GRAPHSVC_STORE_TIMEOUT``):
            connecting, waiting for a pooled connection and retrying transient failures all
            fit in it, then the call raises :class:`StoreUnavailableError`. Work on a live
            server (a large batch) is not cut short by it.
        ping_timeout: the most one :meth:`ping` waits (capped by ``timeout``).
    """

    kind = "neo4j"
    concurrent_writes = True
    overlapped_reads = True

    def __init__(
        self,
        uri: str,
        *,
        user: str = "neo4j",
        password: SecretStr | None = None,
        database: str = "neo4j",
        timeout: float = DEFAULT_TIMEOUT,
        ping_timeout: float = PING_TIMEOUT,
    ) -> None:
        self.uri = uri
        self.boundary = Neo4jBoundary(
            uri,
            user=user,
            password=password,
            database=database,
            timeout=timeout,
            ping_timeout=ping_timeout,
        )
        self.writes = Neo4jWrites(self.boundary)
        self.erasure = Neo4jErasure(self.boundary)
        self.reads = Neo4jReads(self.boundary)
        self.candidate_reads = Neo4jCandidates(self.boundary)
        self.vectors = Neo4jVectors(self.boundary)
        self.vector_queue = Neo4jVectorQueue(self.boundary)

    # -- lifecycle -------------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, make sure of the schema (idempotent migrations, and the vector index of
        every dimension a namespace's model has), and count once what a database written
        before graphsvc kept its counts lacks."""
        if self.boundary.is_open:
            return
        self.boundary.open()
        try:
            self.vectors.ensure_vector_indexes()
            backfill_counts(self.boundary)
            backfill_facets(self.boundary)
            self.vector_queue.backfill()
        except GraphsvcError:
            self.close()
            raise

    def close(self) -> None:
        self.boundary.close()

    def ping(self) -> None:
        self.boundary.ping()

    namespaces = delegate("reads", Neo4jReads.namespaces)
    export = delegate("reads", Neo4jReads.export)

    # -- writes and erasure ----------------------------------------------------------------------

    upsert_memories = delegate("writes", Neo4jWrites.upsert_memories)
    add_links = delegate("writes", Neo4jWrites.add_links)
    save_belief = delegate("writes", Neo4jWrites.save_belief)
    append_event = delegate("writes", Neo4jWrites.append_event)
    set_reported_tokens = delegate("writes", Neo4jWrites.set_reported_tokens)
    forget = delegate("erasure", Neo4jErasure.forget)
    erase = delegate("erasure", Neo4jErasure.erase)

    # -- reads -----------------------------------------------------------------------------------

    get_memories = delegate("reads", Neo4jReads.get_memories)
    window = delegate("reads", Neo4jReads.window)
    supersessions = delegate("reads", Neo4jReads.supersessions)
    walk = delegate("reads", Neo4jReads.walk)
    visible = delegate("reads", Neo4jReads.visible)
    successors = delegate("reads", Neo4jReads.successors)
    supersession_chain = delegate("reads", Neo4jReads.supersession_chain)
    next_recorded = delegate("reads", Neo4jReads.next_recorded)
    links_of = delegate("reads", Neo4jReads.links_of)
    get_belief = delegate("reads", Neo4jReads.get_belief)
    events = delegate("reads", Neo4jReads.events)
    stats = delegate("reads", Neo4jReads.stats)
    list_memories = delegate("reads", Neo4jReads.list_memories)
    facet_counts = delegate("reads", Neo4jReads.facet_counts)

    # -- candidate reads -------------------------------------------------------------------------

    term_stats = delegate("candidate_reads", Neo4jCandidates.term_stats)
    candidates = delegate("candidate_reads", Neo4jCandidates.candidates)
    recent_candidates = delegate("candidate_reads", Neo4jCandidates.recent_candidates)
    recall_candidates = delegate("candidate_reads", Neo4jCandidates.recall_candidates)
    recall_columns = delegate("candidate_reads", Neo4jCandidates.recall_columns)
    recall_window = delegate("candidate_reads", Neo4jCandidates.recall_window)
    similar = delegate("candidate_reads", Neo4jCandidates.similar)

    # -- vectors and the vector queue ------------------------------------------------------------

    vector_model = delegate("vectors", Neo4jVectors.vector_model)
    set_vector_model = delegate("vectors", Neo4jVectors.set_vector_model)
    clear_vectors = delegate("vectors", Neo4jVectors.clear_vectors)
    set_vectors = delegate("vectors", Neo4jVectors.set_vectors)
    vector_count = delegate("vectors", Neo4jVectors.vector_count)
    pending_vectors = delegate("vector_queue", Neo4jVectorQueue.pending_vectors)
    fill_vectors = delegate("vector_queue", Neo4jVectorQueue.fill_vectors)
    vector_backlogs = delegate("vector_queue", Neo4jVectorQueue.vector_backlogs)
    take_vector_queue = delegate("vector_queue", Neo4jVectorQueue.take_vector_queue)
    release_vector_queue = delegate("vector_queue", Neo4jVectorQueue.release_vector_queue)
    vector_queue_lease = delegate("vector_queue", Neo4jVectorQueue.vector_queue_lease)
