"""The Neo4j store's vector queue (:class:`~graphsvc.store.base.VectorQueue`): memories that
wait for their vector carry an indexed property, read oldest first; the lease on draining it is
one node; a database written before graphsvc kept the queue is backfilled at open."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import numpy as np
from neo4j import Transaction

from graphsvc.embedding.codes import VectorModel
from graphsvc.store.base import VectorQueue
from graphsvc.store.neo4j.boundary import Neo4jBoundary, tx_query
from graphsvc.store.neo4j.counts import bump_counts
from graphsvc.store.neo4j.vectors import vector_model_from_row, vector_property
from graphsvc.store.vectors import PendingVector, QueueLease, VectorBacklog, wrong_length

#: Memories a transaction of the vector queue's backfill reads (backfill_vector_queue.cypher).
QUEUE_PAGE = 10_000

logger = logging.getLogger(__name__)


class Neo4jVectorQueue(VectorQueue):
    """The vector queue through the store's boundary."""

    def __init__(self, boundary: Neo4jBoundary) -> None:
        self._boundary = boundary

    def pending_vectors(self, namespace: str, limit: int) -> list[PendingVector]:
        if limit <= 0:
            return []
        rows = self._boundary.read("pending_vectors", ns=namespace, limit=limit)
        # A memory forgotten or erased by another transaction while this one read it comes back
        # with no properties (read committed): it no longer waits, so it is left out.
        return [
            PendingVector(UUID(row["id"]), int(row["recordedUs"]), row["text"])
            for row in rows
            if row["id"] is not None
        ]

    def fill_vectors(
        self,
        namespace: str,
        model: VectorModel,
        vectors: Sequence[tuple[PendingVector, bytes]],
    ) -> int:
        rows: dict[str, dict[str, Any]] = {}
        for item, data in vectors:
            if len(data) != model.dimension:
                raise wrong_length(f"the vector of memory {item.id}", len(data), namespace, model)
            rows.setdefault(  # one row per memory (the first), so it is stored once
                str(item.id),
                {
                    "id": str(item.id),
                    "recordedUs": item.recorded_us,
                    "codes": np.frombuffer(data, dtype=np.int8).tolist(),
                },
            )
        if not rows:
            return 0

        def work(tx: Transaction) -> int:
            state = tx_query(tx, "lock_vector_state", ns=namespace)[0]
            if vector_model_from_row(state) != model:
                return 0  # the model changed (or is being replaced): these codes are stale
            stored = int(
                tx_query(
                    tx,
                    "fill_vectors",
                    ns=namespace,
                    rows=list(rows.values()),
                    property=vector_property(model.dimension),
                    dimension=model.dimension,
                )[0]["stored"]
            )
            if stored:
                bump_counts(tx, namespace, vectors=stored)
            return stored

        return self._boundary.write(work)

    def vector_backlogs(self) -> list[VectorBacklog]:
        return [
            VectorBacklog(
                row["namespace"],
                int(row["memories"]) - int(row["vectors"]),
                int(row["vectors"]),
                vector_model_from_row(row),
            )
            for row in self._boundary.read("vector_backlogs")
        ]

    def take_vector_queue(self, owner: str, seconds: float) -> bool:
        ms = max(1, round(seconds * 1000))
        rows = self._boundary.write(
            lambda tx: tx_query(tx, "take_vector_queue", owner=owner, ms=ms)
        )
        return bool(rows[0]["held"])

    def release_vector_queue(self, owner: str) -> None:
        self._boundary.write(lambda tx: tx_query(tx, "release_vector_queue", owner=owner))

    def vector_queue_lease(self) -> QueueLease | None:
        row = self._boundary.read("vector_queue_lease")[0]
        if row["owner"] is None or row["leftMs"] is None or int(row["leftMs"]) <= 0:
            return None
        return QueueLease(str(row["owner"]), int(row["leftMs"]) / 1000.0)

    def backfill(self) -> None:
        """Put the memories without a vector of every namespace written before graphsvc kept
        its vector queue in it (backfill_vector_queue.cypher), a page a transaction; writes
        keep the queue from then on."""
        for row in self._boundary.read("queue_unkept_namespaces"):
            self._backfill_queue_of(str(row["namespace"]))

    def _backfill_queue_of(self, namespace: str) -> None:
        after, marked = "", 0
        while True:

            def work(tx: Transaction, after: str = after) -> list[Any]:
                return tx_query(
                    tx, "backfill_vector_queue", ns=namespace, after=after, page=QUEUE_PAGE
                )

            rows = self._boundary.write(work)
            if not rows:  # another process finished it
                return
            marked += int(rows[0]["marked"])
            if rows[0]["done"]:
                logger.info(
                    "namespace %r: put %d memory(ies) without a vector in the vector queue "
                    "once; writes keep the queue from now on",
                    namespace,
                    marked,
                )
                return
            after = str(rows[0]["last"])
