"""Writes: ``remember``, ``remember_many``, ``write_memories``, ``write_batches``, and the vectors
of a write."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from uuid import UUID

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import ContextEventKind, Memory, MemoryInput, WriteResult, construct
from graphsvc.service.checks import check_interval, restored_times
from graphsvc.service.core import ServiceCore
from graphsvc.service.ids import content_ids
from graphsvc.service.reads import with_ends
from graphsvc.text import analyse_many, estimate_tokens


class Writes(ServiceCore):
    """The service's writes of memories: all or nothing, recorded in write order."""

    def make_memory(self, namespace: str, item: MemoryInput, recorded_at: datetime) -> Memory:
        """Validate an input against the limits and build the memory to store."""
        return self._make_memories(namespace, [item], recorded_at)[0]

    def _make_memories(
        self,
        namespace: str,
        items: Sequence[MemoryInput],
        start: datetime,
        recorded: Sequence[datetime | None] | None = None,
    ) -> list[Memory]:
        """:meth:`make_memory` for each input, recorded one microsecond apart from ``start``
        (``recorded``: a restored ``recordedAt`` per input, None for the write time: an import
        keeps what an export recorded). ASCII text that is not blank and within the limit
        passes :meth:`check_input` without calling it (ASCII is valid Unicode); any other text
        is checked by it. Every input is checked before anything is computed from one."""
        limit = self.settings.max_text_chars
        texts = [item.text for item in items]
        for item, text in zip(items, texts, strict=True):
            if not (text.isascii() and 0 < len(text) <= limit and not text.isspace()):
                self.check_input(item)
        step = timedelta(microseconds=1)
        times = [start + step * at for at in range(len(items))]
        if recorded is not None:
            times = restored_times(times, recorded, "recordedAt")
        for at, item in enumerate(items):
            if item.valid_until is not None and item.valid_from is None:
                check_interval(item, times[at], at if len(items) > 1 else None)
        made: list[Memory] = []
        for at, (item, text, mid, terms) in enumerate(
            zip(items, texts, content_ids(namespace, items), analyse_many(texts), strict=True)
        ):
            made.append(
                construct(
                    Memory,
                    {
                        "id": mid,
                        "namespace": namespace,
                        "text": text,
                        "kind": item.kind,
                        "occurred_at": item.occurred_at,
                        "recorded_at": times[at],
                        "invalidated_at": None,
                        "tags": tuple(item.tags),
                        "source": item.source,
                        "confidence": item.confidence,
                        "tokens": estimate_tokens(text),
                        "terms": terms,
                        "valid_from": item.valid_from,
                        "valid_until": item.valid_until,
                    },
                )
            )
        return made

    def remember(
        self, namespace: str, item: MemoryInput, *, run_id: str | None = None, step: int = 0
    ) -> Memory:
        """Write one memory; an existing id with the same content is a no-op."""
        return self.remember_many(namespace, [item], run_id=run_id, step=step)[0]

    def remember_many(
        self,
        namespace: str,
        items: Sequence[MemoryInput],
        *,
        run_id: str | None = None,
        step: int = 0,
        wait_for_vectors: bool | None = None,
    ) -> list[Memory]:
        """Write memories, all or nothing. Returns them as stored, in input order.
        ``wait_for_vectors``: acknowledge after their vectors are stored (True), or at lexical
        speed with the vectors following from the queue (False); None: the server's
        ``GRAPHSVC_EMBED_WRITES``."""
        return self.write_memories(
            namespace, items, run_id=run_id, step=step, wait_for_vectors=wait_for_vectors
        )[0]

    def write_memories(
        self,
        namespace: str,
        items: Sequence[MemoryInput],
        *,
        run_id: str | None = None,
        step: int = 0,
        recorded: Sequence[datetime | None] | None = None,
        wait_for_vectors: bool | None = None,
    ) -> tuple[list[Memory], WriteResult]:
        """As :meth:`remember_many`, and also say what was created, unchanged and evicted.
        ``recorded``: a ``recordedAt`` to restore per item (None: the write's time), for an
        import of what an export recorded."""
        self._check_write(namespace, items, run_id)
        start = self.clock.now(len(items))
        return self._write_memories(
            namespace, items, start, run_id, step, recorded, wait_for_vectors
        )

    def write_batches(
        self,
        namespace: str,
        batches: Iterable[Sequence[MemoryInput]],
        *,
        writers: int = 1,
        recorded: Iterable[Sequence[datetime | None]] | None = None,
    ) -> Iterator[tuple[list[Memory], WriteResult]]:
        """:meth:`write_memories` for each batch, with up to ``writers`` batches in flight on a
        store that takes concurrent writes (:attr:`Store.concurrent_writes`: Neo4j, whose
        server then works on several transactions at once; the embedded store writes one at a
        time, so there it is always one).

        Each batch is checked before it starts and is atomic, and it is recorded after the
        batches before it whichever commits first (the times are handed out in batch order).
        Yields each batch's result in batch order as it is acknowledged. When a batch fails,
        no further batch starts, the ones in flight finish, and the first error is raised: the
        batches yielded before were written, and so may be the ones in flight after the failed
        one (writing the same input again is safe: an existing id with the same content is a
        no-op). The namespace's memory cap holds: the stores evict under the namespace's count
        (on Neo4j its NamespaceStat's lock), so two batches at the cap evict one after the
        other; on Neo4j they can deadlock there and be retried, which is why
        :func:`graphsvc.ingest.ingest` writes a file that could reach the cap with one.
        """
        if writers < 1:
            raise BadInputError(f"writers must be at least 1, got {writers}")
        times: Iterator[Sequence[datetime | None] | None] = (
            iter(recorded) if recorded is not None else itertools.repeat(None)
        )
        if writers == 1 or not self.store.concurrent_writes:
            for batch in batches:
                yield self.write_memories(namespace, batch, recorded=next(times))
            return
        # At most ``writers`` batches are pending, each on a thread of its own from the moment
        # it is submitted; leaving the pool waits for them (after a failure too).
        pending: deque[Future[tuple[list[Memory], WriteResult]]] = deque()
        with ThreadPoolExecutor(writers, thread_name_prefix="graphsvc-write") as pool:
            for batch in batches:
                self._check_write(namespace, batch, None)
                start = self.clock.now(len(batch))
                pending.append(
                    pool.submit(self._write_memories, namespace, batch, start, None, 0, next(times))
                )
                if len(pending) >= writers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def _check_write(
        self, namespace: str, items: Sequence[MemoryInput], run_id: str | None
    ) -> None:
        """What :meth:`write_memories` refuses before anything is computed."""
        self.check_namespace(namespace)
        if run_id is not None:
            self.check_run_id(run_id)
        if not items:
            raise BadInputError("no memories to write: send at least one")
        if len(items) > self.settings.max_batch:
            raise LimitExceededError(
                f"{len(items)} memories in one write; the limit is {self.settings.max_batch} "
                "(GRAPHSVC_MAX_BATCH): split the batch"
            )
        if len(items) > self.settings.max_memories_per_namespace:
            raise LimitExceededError(
                f"{len(items)} memories exceed the namespace cap of "
                f"{self.settings.max_memories_per_namespace}"
            )

    def _write_memories(
        self,
        namespace: str,
        items: Sequence[MemoryInput],
        start: datetime,
        run_id: str | None,
        step: int,
        recorded: Sequence[datetime | None] | None = None,
        wait_for_vectors: bool | None = None,
    ) -> tuple[list[Memory], WriteResult]:
        """A checked write, recorded from ``start`` (one microsecond a memory) or at the times
        ``recorded`` restores; its vectors in the write or from the queue as
        :meth:`remember_many` says."""
        memories = self._make_memories(namespace, items, start, recorded)
        inline = (
            self.settings.embed_writes == "inline" if wait_for_vectors is None else wait_for_vectors
        )
        if inline:
            vectors = self._vectors(namespace, memories)
        else:  # their vectors follow from the queue, which drains namespaces of its model
            self.dense.declare(self.store, namespace)
            vectors = None
        result = self.store.upsert_memories(
            namespace,
            memories,
            max_memories=self.settings.max_memories_per_namespace,
            vectors=vectors,
        )
        if result.created and not inline:
            self.vector_queue.notify()
        # What was created is what we built; only memories already there are read back.
        if result.unchanged:
            created = set(result.created)
            by_id = {m.id: m for m in memories if m.id in created}
            by_id.update(
                (m.id, m)
                for m in with_ends(
                    self.store, namespace, self.store.get_memories(namespace, result.unchanged)
                )
            )
            stored = [by_id[m.id] for m in memories]
        else:  # every memory of the write was created: as built
            stored = memories
        # A memory just created has no successor: it ends at its own validUntil, if any.
        stored = [
            m.model_copy(update={"invalidated_at": m.valid_until})
            if m.valid_until is not None and m.invalidated_at is None
            else m
            for m in stored
        ]
        if run_id is not None:
            self._write_events(namespace, run_id, step, memories, result)
        return stored, result

    def _write_events(
        self,
        namespace: str,
        run_id: str,
        step: int,
        memories: Sequence[Memory],
        result: WriteResult,
    ) -> None:
        """The run's ``memory_write`` event for what a write created and ``memory_evict`` for
        what it evicted, both at one time."""
        at = self.clock.now()
        if result.created:
            made = {m.id: m for m in memories}
            new_tokens = sum(made[i].tokens for i in result.created)
            self.store.append_event(
                namespace,
                run_id,
                step=step,
                kind=ContextEventKind.MEMORY_WRITE,
                detail=f"wrote {len(result.created)} memory(ies): "
                + ", ".join(str(i) for i in result.created[:20]),
                est_tokens=new_tokens,
                at=at,
            )
        if result.evicted:
            self.store.append_event(
                namespace,
                run_id,
                step=step,
                kind=ContextEventKind.MEMORY_EVICT,
                detail=f"evicted {len(result.evicted)} oldest memory(ies) to stay within the "
                f"cap of {self.settings.max_memories_per_namespace}: "
                + ", ".join(str(i) for i in result.evicted[:20]),
                est_tokens=None,
                at=at,
            )

    def _vectors(self, namespace: str, memories: Sequence[Memory]) -> dict[UUID, bytes] | None:
        """With ``GRAPHSVC_EMBED_WRITES=inline``: the codes of the memories of a write that
        have none yet (None: dense recall does not apply to the namespace). Memories already
        stored with a vector are not encoded again."""
        if self.dense.for_namespace(self.store, namespace, writing=True) is None:
            return None
        unique = {m.id: m for m in memories}
        known = {m.id for m in self.store.get_memories(namespace, list(unique))}
        todo = [m for m in unique.values() if m.id not in known]
        return dict(
            zip((m.id for m in todo), self.dense.codes([m.text for m in todo]), strict=True)
        )
