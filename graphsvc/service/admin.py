"""Administration: ``stats``, ``draining``, ``embed``, ``embed_model`` (the vectors of a
namespace), ``namespaces``, ``get_belief``, ``export``; the store's lifecycle (``ping``,
``close``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from uuid import UUID

from graphsvc.embedding.codes import VectorModel
from graphsvc.errors import BadInputError
from graphsvc.model import Belief, Link, Memory, NamespaceStats
from graphsvc.service.checks import in_range
from graphsvc.service.core import ServiceCore


class Admin(ServiceCore):
    """The service's administration of namespaces, their vectors and the store."""

    def stats(self, namespace: str) -> NamespaceStats:
        """Counts for the namespace, how its bundles are answered (hybrid or lexical, why), and
        how many of its memories wait for their vector (the vector queue's backlog)."""
        self.check_namespace(namespace)
        counts = self.store.stats(namespace)
        status = self.dense.status(self.store, namespace)
        vectors = self.store.vector_count(namespace)
        current = self.store.vector_model(namespace)
        pending, note = self.dense.backlog(current, vectors, counts.memories)
        if pending and current is not None:  # a namespace of this model: the queue drains it
            note = f"{note}; {self.draining()}"
        return counts.model_copy(
            update={
                "vectors": vectors,
                "pending_vectors": pending,
                "retrieval": status.retrieval,
                "embed_model": status.model,
                "retrieval_note": note,
            }
        )

    def draining(self) -> str:
        """Who encodes the vector queue, as a person reads it: this process's queue, another
        process that holds the store's lease on it, or nobody (then the command that does)."""
        queue = self.vector_queue.status()
        if queue.state in ("starting", "idle", "draining"):
            rate = f" (about {queue.rate:.0f} a second)" if queue.rate >= 1 else ""
            return f"this server encodes them in the background{rate}"
        if queue.state == "failing":
            return f"this server's vector queue is failing ({queue.error}); it tries again"
        lease = self.store.vector_queue_lease()
        if lease is not None:
            return f"{lease.owner} encodes them in the background"
        return "no server runs the queue: run `graphsvc embed` to encode them"

    def embed(
        self,
        namespace: str,
        *,
        rebuild: bool = False,
        batch: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Drain the namespace's vector queue here: give every memory that waits for a vector
        one of this service's encoder (``graphsvc embed``); the number stored. Resumable: the
        queue is the stores' own and each step is durable, so an interrupted run is finished by
        running it again (or by a server). ``batch``: memories a step (default
        ``GRAPHSVC_EMBED_QUEUE_BATCH``); ``progress`` is called with the number of memories
        each durable step read. ``rebuild``: as :meth:`embed_model`.

        Raises:
            BadInputError: as :meth:`embed_model`, or ``batch`` is below 1.
        """
        if batch is not None:
            in_range("batch", batch, 1, 10_000)
        model = self.embed_model(namespace, rebuild=rebuild)
        return self.vector_queue.drain(namespace, model, limit=batch, progress=progress)

    def embed_model(self, namespace: str, *, rebuild: bool = False) -> VectorModel:
        """Make the namespace's vectors this service's encoder's, and return its model: the
        model the queue of this namespace is drained with.

        Vectors of another model are replaced only with ``rebuild`` (which also re-encodes
        vectors of this model): the namespace is marked as being replaced (lexical recall) and
        its vectors cleared, which puts every memory back in the vector queue, before the new
        model is declared, so two models never mix. A namespace without a model (or whose
        replacement was interrupted) gets this one.

        Raises:
            BadInputError: dense recall is off, or the namespace's vectors come from another
                model and ``rebuild`` is not set.
        """
        self.check_namespace(namespace)
        mine = self.dense.model()
        if mine is None:
            raise BadInputError(f"{self.dense.status().reason}: nothing to encode with")
        current = self.store.vector_model(namespace)
        if current is not None and current != mine and not rebuild:
            raise BadInputError(
                f"the namespace's vectors come from {current.model_id}, not {mine.model_id}: "
                "pass --rebuild to replace them"
            )
        if rebuild or current != mine:
            self.store.set_vector_model(namespace, None)
            while self.store.clear_vectors(namespace, 1_000):
                pass
            self.store.set_vector_model(namespace, mine)
        return mine

    def namespaces(self) -> list[str]:
        """Every namespace that holds a memory, sorted (for store-wide admin commands)."""
        return self.store.namespaces()

    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        """A stored belief of the namespace (written by the reconstruct mutation), or None."""
        self.check_namespace(namespace)
        return self.store.get_belief(namespace, belief_id)

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        """Every memory of the namespace (oldest first), then every link: the export format."""
        self.check_namespace(namespace)
        return self.store.export(namespace)

    # -- the store's lifecycle ---------------------------------------------------------------------

    def ping(self) -> None:
        """Raise StoreUnavailableError unless the store answers now."""
        self.store.ping()

    def close(self) -> None:
        """Stop the vector queue (its step under way is given up after its current encoder
        call), close the store (connections,
        files, locks) and stop the threads of the reads beside a request's own and the query
        encoder's. Safe to call twice."""
        self.vector_queue.close(self.settings.shutdown_timeout)
        self._read_ahead.close()
        self.recall.close()
        self.dense.close()
        self.store.close()
