"""The embedded store's vectors of memories (dense recall): the namespace's model, vector writes,
and the vector queue (the memories that wait for theirs, and who drains it)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from uuid import UUID

from graphsvc.embedding.codes import VectorModel
from graphsvc.store.mirror.rows import (
    log_model_row,
    log_vector_rows,
)
from graphsvc.store.mirror.state import KEY_BITS, KEY_MASK, MirrorNamespace, MirrorState
from graphsvc.store.mirror.writer import LogWriter
from graphsvc.store.vectors import (
    PendingVector,
    QueueLease,
    VectorBacklog,
    bad_model,
    no_vector_model,
    vectors_in_the_way,
    wrong_length,
)


def check_vectors(namespace: str, space: MirrorNamespace, vectors: Mapping[UUID, bytes]) -> None:
    """Raise BadInputError unless every vector fits the namespace's model."""
    model = space.model
    if model is None:
        raise no_vector_model(namespace)
    for mid, codes in vectors.items():
        if len(codes) != model.dimension:
            raise wrong_length(f"the vector of memory {mid}", len(codes), namespace, model)


class MirrorVectors:
    """A namespace's vector model, its vectors written or cleared, and the vector queue: a
    part of :class:`~graphsvc.store.mirror.MirrorStore`."""

    def __init__(self, state: MirrorState, log: LogWriter) -> None:
        self._state = state
        self._log = log
        self._lock = log.lock
        # Who drains the vector queue, and until when (time.monotonic()): one process holds
        # the data directory, so the lease lives in it (take_vector_queue).
        self._lease: tuple[str, float] | None = None

    def vector_model(self, namespace: str) -> VectorModel | None:
        with self._lock:
            space = self._state.spaces.get(namespace)
            return None if space is None else space.model

    def set_vector_model(self, namespace: str, model: VectorModel | None) -> None:
        with self._lock:
            space = self._state.space(namespace)
            if model == space.model:
                return
            if model is not None:
                problem = bad_model(model)
                if problem is not None:
                    raise problem
                if space.vectors is not None:
                    raise vectors_in_the_way(namespace, len(space.vectors), model, space.model)

            def apply() -> None:
                space.model = model

            self._log.write(
                {"op": "vectorModel", "ns": namespace, "model": log_model_row(model)}, apply
            )

    def clear_vectors(self, namespace: str, limit: int) -> int:
        with self._lock:
            space = self._state.spaces.get(namespace)
            table = None if space is None else space.vectors
            if space is None or table is None or limit <= 0:
                return 0
            # The last rows, last first: removing them moves no other row.
            doomed = table.ids[len(table) - min(limit, len(table)) :][::-1]

            def apply() -> None:
                for mid in doomed:
                    space.remove_vector(mid.int)

            record = {"op": "clearVectors", "ns": namespace, "ids": [str(m) for m in doomed]}
            self._log.write(record, apply)
            return len(doomed)

    def set_vectors(self, namespace: str, vectors: Mapping[UUID, bytes]) -> int:
        with self._lock:
            space = self._state.space(namespace)
            check_vectors(namespace, space, vectors)
            known = [(mid, codes) for mid, codes in vectors.items() if mid.int in space.memories]
            if known:
                record = {"op": "vectors", "ns": namespace, "vectors": log_vector_rows(known)}
                self._log.write(record, lambda: space.put_vectors(known))
            return len(known)

    def vector_count(self, namespace: str) -> int:
        with self._lock:
            space = self._state.spaces.get(namespace)
            return 0 if space is None or space.vectors is None else len(space.vectors)

    def pending_vectors(self, namespace: str, limit: int) -> list[PendingVector]:
        with self._lock:
            space = self._state.spaces.get(namespace)
            if space is None or limit <= 0 or not space.memories:
                return []
            table = space.memories
            row_of, texts = table.row_of, table.texts
            page = []
            for entry in space.vector_queue().islice(0, limit):
                key = entry & KEY_MASK
                text = texts[row_of[key]]
                assert text is not None  # a live row
                page.append(PendingVector(table.uuid(key), entry >> KEY_BITS, text))
            return page

    def fill_vectors(
        self,
        namespace: str,
        model: VectorModel,
        vectors: Sequence[tuple[PendingVector, bytes]],
    ) -> int:
        with self._lock:
            space = self._state.spaces.get(namespace)
            if space is None or space.model != model:
                return 0
            for item, codes in vectors:
                if len(codes) != model.dimension:
                    raise wrong_length(
                        f"the vector of memory {item.id}", len(codes), namespace, model
                    )
            table, stored = space.memories, space.vectors
            row_of, recorded = table.row_of, table.recorded
            given: dict[UUID, bytes] = {}
            for item, codes in vectors:
                key = item.id.int
                row = row_of.get(key)
                if (
                    row is None
                    or recorded[row] != item.recorded_us
                    or (stored is not None and key in stored)
                    or item.id in given
                ):
                    continue  # forgotten, written again, or given its vector meanwhile
                given[item.id] = codes
            if given:
                known = list(given.items())
                record = {"op": "vectors", "ns": namespace, "vectors": log_vector_rows(known)}
                self._log.write(record, lambda: space.put_vectors(known))
            return len(given)

    def vector_backlogs(self) -> list[VectorBacklog]:
        with self._lock:
            found = []
            for namespace in sorted(self._state.spaces):
                space = self._state.spaces[namespace]
                vectors = 0 if space.vectors is None else len(space.vectors)
                if len(space.memories) > vectors:
                    found.append(
                        VectorBacklog(
                            namespace, len(space.memories) - vectors, vectors, space.model
                        )
                    )
            return found

    def take_vector_queue(self, owner: str, seconds: float) -> bool:
        if self._log.read_only:
            return False
        with self._lock:
            now = time.monotonic()
            lease = self._lease
            if lease is None or lease[0] == owner or lease[1] <= now:
                self._lease = (owner, now + seconds)
                return True
            return False

    def release_vector_queue(self, owner: str) -> None:
        with self._lock:
            if self._lease is not None and self._lease[0] == owner:
                self._lease = None

    def vector_queue_lease(self) -> QueueLease | None:
        with self._lock:
            lease = self._lease
            if lease is None:
                return None
            left = lease[1] - time.monotonic()
            return QueueLease(lease[0], left) if left > 0 else None
