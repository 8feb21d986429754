"""The embedded store's :class:`~graphsvc.store.base.Store` interface: reads of the in-memory
state under the store's lock, and writes that check, log and apply one record each."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import IO, Any
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.dense import SearchPool, VectorModel, with_given
from graphsvc.model import (
    AsOf,
    Belief,
    ContextEvent,
    ContextEventKind,
    EraseFilter,
    EraseReceipt,
    ForgetReceipt,
    Link,
    LinkKind,
    LinkRef,
    Memory,
    NamespaceStats,
    Successor,
    WriteResult,
)
from graphsvc.store.base import (
    FACETS,
    HISTORY_HOPS,
    Candidate,
    CandidateColumns,
    FacetCounts,
    PendingVector,
    QueueLease,
    Store,
    TermStats,
    VectorBacklog,
    Walk,
    bad_facet,
    bad_model,
    belief_memory_missing,
    erase_started,
    link_end_missing,
    memory_missing,
    micros,
    no_assembled_event,
    no_vector_model,
    plan_candidates,
    sort_links,
    split_upsert,
    supersedes_cycle,
    vectors_in_the_way,
    wrong_length,
)
from graphsvc.store.journal import LogHead
from graphsvc.store.mirror.links import LinkTuple, make_link
from graphsvc.store.mirror.loader import MirrorLoader
from graphsvc.store.mirror.rows import (
    log_belief_row,
    log_event_row,
    log_link_row,
    log_memory_rows,
    log_model_row,
    log_vector_rows,
    memory_fields,
)
from graphsvc.store.mirror.state import KEY_BITS, KEY_MASK, MirrorNamespace
from graphsvc.store.mirror.table import NO_TIME, MemoryTable, from_micros, row_matcher

_id_of = attrgetter("id")
#: Most memories one slice of an erase examines before it lets go of the store's lock, matching
#: or not (a filter that matches few of a million memories is erased in that many slices).
EXAMINE_PER_SLICE = 20_000
#: Seconds an erase lets go between slices, so that the reads waiting for the lock get it (a
#: thread that lets a lock go and takes it again at once keeps it from waiting threads).
SLICE_PAUSE = 0.001


class MirrorStore(MirrorLoader, Store):
    """The embedded store, persisted under ``data_dir``.

    Args:
        data_dir: folder for ``log.jsonl``, ``snapshot.json`` and ``LOCK`` (created on open).
            ``None`` keeps everything in memory only (nothing persists).
        fsync: fsync the log on every write (turn off only for throwaway data).
        snapshot_bytes: compact the log into a snapshot past this size (in the background).
        read_only: take no lock, change no file, and refuse writes.
    """

    kind = "embedded"

    def __init__(
        self,
        data_dir: Path | None,
        *,
        fsync: bool = True,
        snapshot_bytes: int = 64 * 1024 * 1024,
        read_only: bool = False,
        search_threads: int = 1,
    ) -> None:
        self._dir = data_dir
        self._fsync = fsync
        self._snapshot_bytes = snapshot_bytes
        self._read_only = read_only
        self._lock = threading.RLock()
        self._spaces: dict[str, MirrorNamespace] = {}
        self._seq = 0
        self._gen = 0
        self._log_fd: int | None = None
        self._log_end = 0  # bytes of the active log that hold acknowledged records
        self._log_head: LogHead | None = None
        self._store_id: str | None = None  # the store's id (store.json), once a writer opened
        # Why writes are refused after a failure that could not be rolled back, or None; with
        # the offset to cut back to when a retry may clear it.
        self._broken: str | None = None
        self._broken_offset: int | None = None
        self._compactor: threading.Thread | None = None
        self._compact_after = 0  # after a failed compaction: log size before the next attempt
        self._lock_file: IO[str] | None = None
        self._created_lock = False  # this open created LOCK (a brand-new directory)
        self._open = False
        # Threads a search by meaning splits a large namespace's vectors over (close stops them).
        self._search = SearchPool(search_threads)
        # Who drains the vector queue, and until when (time.monotonic()): one process holds
        # the data directory, so the lease lives in it (take_vector_queue).
        self._lease: tuple[str, float] | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._search.close()

    # -- writes ----------------------------------------------------------------------------------

    def upsert_memories(
        self,
        namespace: str,
        memories: Sequence[Memory],
        *,
        max_memories: int,
        vectors: Mapping[UUID, bytes] | None = None,
    ) -> WriteResult:
        with self._lock:
            space = self._space(namespace)
            keys = [mid.int for mid in map(_id_of, memories)]
            if len(set(keys)) == len(keys) and space.memories.row_of.keys().isdisjoint(keys):
                created, unchanged = list(memories), list[UUID]()  # all new, as split_upsert finds
            else:
                created, unchanged = split_upsert(
                    memories,
                    stored=lambda mid: space.memories.get(mid.int),
                )
            given: dict[UUID, bytes] = {}
            if vectors:
                self._check_vectors(namespace, space, vectors)
                table = space.vectors
                for memory in created:
                    if memory.id in vectors:
                        given[memory.id] = vectors[memory.id]
                for mid in unchanged:  # an unchanged memory gets a vector only if it has none
                    if (
                        mid in vectors
                        and mid not in given
                        and (table is None or mid.int not in table)
                    ):
                        given[mid] = vectors[mid]
            overflow = len(space.memories) + len(created) - max_memories
            evict: list[UUID] = []
            if overflow > 0:
                keep = {mid.int for mid in unchanged}
                for _, old in space.order:
                    if len(evict) == overflow:
                        break
                    if old not in keep:
                        evict.append(space.memories.uuid(old))

            fields = list(map(memory_fields, created))
            columns = list(zip(*fields, strict=True))

            def apply() -> None:
                for mid in evict:
                    self._remove_memory(space, mid.int)
                self._add_columns(space, columns)
                self._put_vectors(space, list(given.items()))

            if created or evict or given:
                record: dict[str, Any] = {
                    "op": "upsert",
                    "ns": namespace,
                    "memories": log_memory_rows(fields, columns),
                    "evict": [str(mid) for mid in evict],
                }
                if given:  # in the same record as the memories: one atomic write
                    record["vectors"] = log_vector_rows(given.items())
                self._write(record, apply)
            return WriteResult(
                created=tuple(m.id for m in created),
                unchanged=tuple(unchanged),
                evicted=tuple(evict),
            )

    def add_links(self, namespace: str, links: Sequence[Link]) -> None:
        with self._lock:
            space = self._space(namespace)
            for link in links:
                for end in (link.source, link.target):
                    if end.int not in space.memories:
                        raise link_end_missing(link, end, namespace)
            self._check_supersedes_acyclic(space, links)
            rows = []
            for link in links:
                old = space.graph.find(link.source.int, link.target.int, link.kind.value)
                if old is not None:  # keep the original creation time
                    link = link.model_copy(update={"created_at": from_micros(old[4])})
                rows.append(log_link_row(link))
            if rows:
                self._write({"op": "link", "ns": namespace, "links": rows})

    @staticmethod
    def _check_supersedes_acyclic(space: MirrorNamespace, links: Sequence[Link]) -> None:
        pending: dict[int, set[int]] = {}
        for link in links:
            if link.kind is LinkKind.SUPERSEDES:
                pending.setdefault(link.source.int, set()).add(link.target.int)
        if not pending:
            return
        graph = space.graph

        def successors(node: int) -> set[int]:
            nxt = {lk[1] for lk in graph.outgoing(node) if lk[2] == "SUPERSEDES"}
            return nxt | pending.get(node, set())

        for start in pending:
            stack, seen = list(pending[start]), set()
            while stack:
                node = stack.pop()
                if node == start:
                    raise supersedes_cycle(UUID(int=start))
                if node not in seen:
                    seen.add(node)
                    stack.extend(successors(node))

    def forget(self, namespace: str, memory_id: UUID, *, at: datetime) -> ForgetReceipt:
        with self._lock:
            space = self._space(namespace)
            if memory_id.int not in space.memories:
                raise memory_missing(memory_id, namespace)
            links = sort_links(self._links_touching(space, memory_id.int))
            beliefs = sorted(space.beliefs_of.get(memory_id.int, set()), key=str)
            self._write({"op": "forget", "ns": namespace, "id": str(memory_id)})
            return ForgetReceipt(
                memory_id=memory_id,
                namespace=namespace,
                removed_links=tuple(
                    LinkRef(source=lk.source, target=lk.target, kind=lk.kind) for lk in links
                ),
                removed_belief_ids=tuple(beliefs),
                forgotten_at=at,
            )

    def erase(
        self,
        namespace: str,
        spec: EraseFilter,
        *,
        at: datetime,
        batch_size: int,
        time_budget: float | None = None,
        progress: Callable[[EraseReceipt], None] | None = None,
    ) -> EraseReceipt:
        """As :meth:`Store.erase`. The whole namespace goes in one logged step (a ``drop``
        record). A filter is erased in slices of ``batch_size`` memories, oldest first, each one
        logged record applied under the store's lock, which is let go between slices so that
        reads (and writes) are served meanwhile; past ``time_budget`` seconds the call stops
        with ``complete=False``, and calling it again with the same filter finishes it. A slice
        examines at most :data:`EXAMINE_PER_SLICE` memories, so a filter that matches few of
        many never holds the lock long either."""
        receipt = erase_started(namespace, spec, at)
        if spec.everything:
            return self._drop(namespace, receipt, progress)
        began = time.monotonic()
        match = row_matcher(spec)
        after: tuple[int, int] | None = None  # the last (recordedAt, key) examined
        rewritten: set[tuple[str, int]] = set()  # events, counted once however many slices
        while True:
            with self._lock:
                space = self._spaces.get(namespace)
                if space is None:
                    return receipt.model_copy(update={"complete": True})
                keys, after, done = self._erase_slice(space, match, after, batch_size)
                if keys:
                    links, beliefs, events = self._erase_logged(space, namespace, keys)
                    receipt = receipt.model_copy(
                        update={
                            "memories": receipt.memories + len(keys),
                            "links": receipt.links + links,
                            "beliefs": receipt.beliefs + beliefs,
                            "events": receipt.events + len(events - rewritten),
                        }
                    )
                    rewritten |= events
            if keys and progress is not None:
                progress(receipt)
            if done:
                return receipt.model_copy(update={"complete": True})
            if time_budget is not None and time.monotonic() - began >= time_budget:
                return receipt
            # The lock is not fair: let the reads waiting for it take it before the next slice.
            time.sleep(SLICE_PAUSE)

    def _erase_logged(
        self, space: MirrorNamespace, namespace: str, keys: list[int]
    ) -> tuple[int, int, set[tuple[str, int]]]:
        """Erase memories in one logged record (oldest first, as the log names them); the links
        and beliefs removed with them and the events rewritten. Lock held."""
        record = {"op": "erase", "ns": namespace, "ids": [str(UUID(int=k)) for k in keys]}
        removed: list[tuple[int, int, set[tuple[str, int]]]] = []

        def apply() -> None:
            removed.append(self._erase_memories(space, keys))

        self._write(record, apply)
        return removed[0]

    @staticmethod
    def _erase_slice(
        space: MirrorNamespace,
        match: Callable[[MemoryTable, int], bool],
        after: tuple[int, int] | None,
        batch_size: int,
    ) -> tuple[list[int], tuple[int, int] | None, bool]:
        """The next slice: up to ``batch_size`` keys of memories the filter matches, oldest
        first, from after ``after``; the last position examined; whether the namespace was
        examined to its end. Lock held."""
        table = space.memories
        row_of = table.row_of
        keys: list[int] = []
        items = space.order.irange(minimum=after, inclusive=(False, True)) if after else space.order
        last = after
        for examined, item in enumerate(items, 1):
            last = item
            if match(table, row_of[item[1]]):
                keys.append(item[1])
                if len(keys) >= batch_size:
                    return keys, last, False
            if examined >= EXAMINE_PER_SLICE:
                return keys, last, False
        return keys, last, True

    def _drop(
        self,
        namespace: str,
        receipt: EraseReceipt,
        progress: Callable[[EraseReceipt], None] | None,
    ) -> EraseReceipt:
        """Erase the whole namespace in one logged step."""
        with self._lock:
            space = self._spaces.get(namespace)
            if space is None or not (space.memories or space.beliefs or space.events):
                return receipt.model_copy(update={"complete": True})
            counts = {
                "memories": len(space.memories),
                "links": space.graph.count,
                "beliefs": len(space.beliefs),
                "events": sum(len(events) for events in space.events.values()),
            }
            self._write({"op": "drop", "ns": namespace})
            receipt = receipt.model_copy(update=counts)
        if progress is not None:
            progress(receipt)
        return receipt.model_copy(update={"complete": True})

    def save_belief(self, belief: Belief) -> None:
        with self._lock:
            space = self._space(belief.namespace)
            missing = [
                m
                for m in (*belief.source_ids, *belief.linked_context_ids)
                if m.int not in space.memories
            ]
            if missing:
                raise belief_memory_missing(missing[0])
            self._write({"op": "belief", "ns": belief.namespace, "belief": log_belief_row(belief)})

    def append_event(
        self,
        namespace: str,
        run_id: str,
        *,
        step: int,
        kind: str,
        detail: str | None,
        est_tokens: int | None,
        at: datetime,
    ) -> ContextEvent:
        with self._lock:
            space = self._space(namespace)
            event = ContextEvent(
                run_id=run_id,
                seq=len(space.events.get(run_id, ())),
                step=step,
                kind=ContextEventKind(kind),
                detail=detail,
                est_tokens=est_tokens,
                reported_tokens=None,
                recorded_at=at,
            )
            self._write({"op": "event", "ns": namespace, "event": log_event_row(event)})
            return event

    def set_reported_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        with self._lock:
            events = self._space(namespace).events.get(run_id, [])
            target = self._assembled(events, step)
            if target is None:
                raise no_assembled_event(run_id, step)
            self._write(
                {
                    "op": "report",
                    "ns": namespace,
                    "run": run_id,
                    "eventSeq": target.seq,
                    "tokens": reported_tokens,
                }
            )
            return events[target.seq]

    @staticmethod
    def _assembled(events: Sequence[ContextEvent], step: int) -> ContextEvent | None:
        found = [e for e in events if e.step == step and e.kind is ContextEventKind.ASSEMBLED]
        return found[-1] if found else None

    # -- vectors ---------------------------------------------------------------------------------

    @staticmethod
    def _check_vectors(
        namespace: str, space: MirrorNamespace, vectors: Mapping[UUID, bytes]
    ) -> None:
        """Raise BadInputError unless every vector fits the namespace's model."""
        model = space.model
        if model is None:
            raise no_vector_model(namespace)
        for mid, codes in vectors.items():
            if len(codes) != model.dimension:
                raise wrong_length(f"the vector of memory {mid}", len(codes), namespace, model)

    def vector_model(self, namespace: str) -> VectorModel | None:
        with self._lock:
            space = self._spaces.get(namespace)
            return None if space is None else space.model

    def set_vector_model(self, namespace: str, model: VectorModel | None) -> None:
        with self._lock:
            space = self._space(namespace)
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

            self._write(
                {"op": "vectorModel", "ns": namespace, "model": log_model_row(model)}, apply
            )

    def clear_vectors(self, namespace: str, limit: int) -> int:
        with self._lock:
            space = self._spaces.get(namespace)
            table = None if space is None else space.vectors
            if space is None or table is None or limit <= 0:
                return 0
            # The last rows, last first: removing them moves no other row.
            doomed = table.ids[len(table) - min(limit, len(table)) :][::-1]

            def apply() -> None:
                for mid in doomed:
                    self._remove_vector(space, mid.int)

            record = {"op": "clearVectors", "ns": namespace, "ids": [str(m) for m in doomed]}
            self._write(record, apply)
            return len(doomed)

    def set_vectors(self, namespace: str, vectors: Mapping[UUID, bytes]) -> int:
        with self._lock:
            space = self._space(namespace)
            self._check_vectors(namespace, space, vectors)
            known = [(mid, codes) for mid, codes in vectors.items() if mid.int in space.memories]
            if known:
                record = {"op": "vectors", "ns": namespace, "vectors": log_vector_rows(known)}
                self._write(record, lambda: self._put_vectors(space, known))
            return len(known)

    def namespaces(self) -> list[str]:
        with self._lock:
            return sorted(ns for ns, space in self._spaces.items() if space.memories)

    def vector_count(self, namespace: str) -> int:
        with self._lock:
            space = self._spaces.get(namespace)
            return 0 if space is None or space.vectors is None else len(space.vectors)

    # -- the vector queue ------------------------------------------------------------------------

    def pending_vectors(self, namespace: str, limit: int) -> list[PendingVector]:
        with self._lock:
            space = self._spaces.get(namespace)
            if space is None or limit <= 0 or not space.memories:
                return []
            table = space.memories
            row_of, texts = table.row_of, table.texts
            page = []
            for entry in self._pending(space).islice(0, limit):
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
            space = self._spaces.get(namespace)
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
                self._write(record, lambda: self._put_vectors(space, known))
            return len(given)

    def vector_backlogs(self) -> list[VectorBacklog]:
        with self._lock:
            found = []
            for namespace in sorted(self._spaces):
                space = self._spaces[namespace]
                vectors = 0 if space.vectors is None else len(space.vectors)
                if len(space.memories) > vectors:
                    found.append(
                        VectorBacklog(
                            namespace, len(space.memories) - vectors, vectors, space.model
                        )
                    )
            return found

    def take_vector_queue(self, owner: str, seconds: float) -> bool:
        if self._read_only:
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

    def similar(
        self, namespace: str, query: bytes, k: int, ids: Sequence[UUID]
    ) -> list[tuple[UUID, float]]:
        """As :meth:`Store.similar`, exactly: the table's :meth:`VectorTable.nearest` (a full
        scan's answer, reading only what can reach the ``k`` best once the table is sketched) and
        the cosines of ``ids``."""
        with self._lock:
            space = self._spaces.get(namespace)
            model = None if space is None else space.model
            if space is None or model is None:
                return []
            if len(query) != model.dimension:
                raise wrong_length("the query vector", len(query), namespace, model)
            table = space.vectors
            if table is None:
                return []
            codes = np.frombuffer(query, dtype=np.int8)
            nearest = table.nearest(codes, k, self._search)
            known = dict(nearest)
            asked = table.cosines_of(codes, [mid.int for mid in ids if mid not in known])
            given = [(UUID(int=key), score) for key, score in asked.items()]
        return with_given(nearest, given, k)

    # -- reads -----------------------------------------------------------------------------------

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        with self._lock:
            table = self._space(namespace).memories
            row_of = table.row_of
            rows = [row_of.get(i.int) for i in ids]
            return table.memories([row for row in rows if row is not None])

    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        with self._lock:
            space = self._space(namespace)
            postings = space.postings
            df = {t: len(postings[t]) if t in postings else 0 for t in terms}
            return TermStats(len(space.memories), space.total_length, df)

    @staticmethod
    def _candidates(
        space: MirrorNamespace, rows: Sequence[int], score_terms: Sequence[str]
    ) -> list[Candidate]:
        """The candidates of ``rows`` (in that order)."""
        table = space.memories
        wanted = np.asarray(rows, dtype=np.int64)
        columns = []
        for term in score_terms:
            posting = space.postings.get(term)
            if posting is None:
                columns.append([0] * len(rows))
            else:
                columns.append(posting.tf_of(wanted).tolist())
        tfs = list(zip(*columns, strict=True)) if columns else [()] * len(rows)
        ids, lengths, recorded = table.ids, table.lengths, table.recorded
        occurred, confidence = table.occurred, table.confidence
        found = []
        for row, tf in zip(rows, tfs, strict=True):
            occ = occurred[row]
            found.append(
                Candidate(
                    ids[row],  # type: ignore[arg-type]
                    tf,
                    lengths[row],
                    recorded[row],
                    None if occ == NO_TIME else occ,
                    confidence[row],
                )
            )
        return found

    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._space(namespace)
            parts = [
                np.frombuffer(posting.rows, dtype=np.int32)
                for posting in (space.postings.get(term) for term in terms)
                if posting is not None and len(posting)
            ]
            if not parts:
                return []
            rows: list[int] = np.unique(np.concatenate(parts)).tolist()
            del parts  # release the postings' buffers before anything can grow them
            rows.sort(key=space.memories.keys.__getitem__)
            return self._candidates(space, rows, score_terms)

    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._space(namespace)
            posting = space.postings.get(term)
            if posting is None:
                return []
            table = space.memories
            recorded, keys = table.recorded, table.keys
            newest = heapq.nsmallest(limit, posting.rows, key=lambda r: (-recorded[r], keys[r]))
            return self._candidates(space, newest, score_terms)

    def recall_columns(
        self, namespace: str, terms: Sequence[str], limit: int, as_of: AsOf | None = None
    ) -> tuple[TermStats, CandidateColumns]:
        """As :meth:`Store.recall_columns`, read straight from the columns and postings under one
        hold of the lock: the candidates' rows in ascending order, no object per candidate
        (``as_of``: the rows visible then, filtered on the columns before anything is built)."""
        with self._lock:
            space = self._space(namespace)
            postings = space.postings
            df = {t: len(postings[t]) if t in postings else 0 for t in terms}
            stats = TermStats(len(space.memories), space.total_length, df)
            plan = plan_candidates(terms, stats, limit)
            if plan.fallback_term is not None:
                rows = self._newest_rows(space, plan.fallback_term, plan.fallback_limit, as_of)
            else:
                rows = self._rows_with(space, plan.terms)
                if as_of is not None:
                    rows = self._visible_rows(space, rows, as_of)
            return stats, self._columns(space, rows, terms)

    @staticmethod
    def _visible_rows(
        space: MirrorNamespace, rows: NDArray[np.int64], as_of: AsOf
    ) -> NDArray[np.int64]:
        """The rows of ``rows`` visible as of ``as_of`` (:meth:`Store.visible`), in order: the
        times are compared on the columns; in VALID mode only the rows left that have an
        incoming SUPERSEDES link (:attr:`LinkGraph.superseded`) are checked for one from a
        memory started by then."""
        table, at = space.memories, as_of.at_us
        recorded = np.frombuffer(table.recorded, dtype=np.int64)[rows]
        if as_of.known:
            return rows[recorded <= at]
        occurred = np.frombuffer(table.occurred, dtype=np.int64)[rows]
        since = np.frombuffer(table.valid_from, dtype=np.int64)[rows]
        until = np.frombuffer(table.valid_until, dtype=np.int64)[rows]
        start = np.where(since != NO_TIME, since, np.where(occurred != NO_TIME, occurred, recorded))
        rows = rows[(start <= at) & ((until == NO_TIME) | (until > at))]
        superseded = space.graph.superseded
        if not superseded:
            return rows
        incoming, keys, start_of = space.graph.inn, table.keys, table.valid_start
        row_of = table.row_of
        closed = [
            i
            for i, row in enumerate(rows.tolist())
            if keys[row] in superseded
            and any(
                lk[2] == "SUPERSEDES" and start_of(row_of[lk[0]]) <= at
                for lk in incoming[keys[row]]
            )
        ]
        return np.delete(rows, closed) if closed else rows

    def visible(self, namespace: str, ids: Sequence[UUID], as_of: AsOf) -> set[UUID]:
        with self._lock:
            space = self._space(namespace)
            row_of = space.memories.row_of
            rows = np.asarray(
                [row for i in ids if (row := row_of.get(i.int)) is not None], dtype=np.int64
            )
            kept = self._visible_rows(space, rows, as_of).tolist()
            return {space.memories.ids[row] for row in kept}

    def successors(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[Successor]:
        with self._lock:
            space = self._space(namespace)
            table, graph = space.memories, space.graph
            superseded, incoming = graph.superseded, graph.inn
            known = as_of.at_us if as_of is not None and as_of.known else None
            found: list[tuple[int, int, int]] = []
            for key in {i.int for i in ids}:
                if key not in superseded or key not in table.row_of:
                    continue
                for lk in incoming[key]:
                    if lk[2] != "SUPERSEDES":
                        continue
                    row = table.row_of[lk[0]]
                    if known is not None and (lk[4] > known or table.recorded[row] > known):
                        continue
                    found.append((key, lk[0], table.valid_start(row)))
            found.sort()
            return [
                Successor(UUID(int=older), UUID(int=newer), from_micros(start))
                for older, newer, start in found
            ]

    def supersession_chain(
        self, namespace: str, memory_id: UUID, max_nodes: int
    ) -> tuple[list[Memory], list[Link]]:
        with self._lock:
            space = self._space(namespace)
            table, graph = space.memories, space.graph
            if memory_id.int not in table:
                return [], []
            seen = {memory_id.int}
            frontier = [memory_id.int]
            for _ in range(HISTORY_HOPS):
                if not frontier or len(seen) >= max_nodes:
                    break
                layer = sorted(
                    {
                        other
                        for key in frontier
                        for lk in graph.touching(key)
                        if lk[2] == "SUPERSEDES"
                        for other in (lk[0], lk[1])
                        if other not in seen
                    }
                )[: max_nodes - len(seen)]
                seen.update(layer)
                frontier = layer
            members = sorted(seen)
            links = [
                lk
                for key in members
                for lk in graph.outgoing(key)
                if lk[2] == "SUPERSEDES" and lk[1] in seen
            ]
            return [table[key] for key in members], list(sort_links(self._links_of(space, links)))

    @staticmethod
    def _rows_with(space: MirrorNamespace, terms: Sequence[str]) -> NDArray[np.int64]:
        """The rows holding one of ``terms``, ascending (the postings' buffers are released
        before this returns: nothing may grow them while a view is held)."""
        parts = [
            np.frombuffer(posting.rows, dtype=np.int32)
            for posting in (space.postings.get(term) for term in terms)
            if posting is not None and len(posting)
        ]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(parts)).astype(np.int64)

    @classmethod
    def _newest_rows(
        cls, space: MirrorNamespace, term: str, limit: int, as_of: AsOf | None = None
    ) -> NDArray[np.int64]:
        """The ``limit`` newest rows holding ``term`` (``recordedAt`` descending, then id), as
        :meth:`recent_candidates` picks them; only the rows recorded no earlier than the
        limit-th newest are ordered in Python (``as_of``: of the rows visible then)."""
        posting = space.postings.get(term)
        if posting is None:
            return np.zeros(0, dtype=np.int64)
        table = space.memories
        rows = np.frombuffer(posting.rows, dtype=np.int32).astype(np.int64)
        if as_of is not None:
            rows = cls._visible_rows(space, rows, as_of)
        if len(rows) > limit > 0:
            recorded = np.frombuffer(table.recorded, dtype=np.int64)[rows]
            kth = np.partition(recorded, len(rows) - limit)[len(rows) - limit]
            rows = rows[recorded >= kth]
            del recorded
        at, keys = table.recorded, table.keys
        newest = heapq.nsmallest(limit, rows.tolist(), key=lambda r: (-at[r], keys[r]))
        return np.asarray(newest, dtype=np.int64)

    @staticmethod
    def _columns(
        space: MirrorNamespace, rows: NDArray[np.int64], terms: Sequence[str]
    ) -> CandidateColumns:
        """The candidate columns of ``rows`` (copies: no view of a growing array escapes)."""
        table = space.memories
        tf = np.zeros((len(rows), len(terms)), dtype=np.int64)
        if len(rows):
            for j, term in enumerate(terms):
                posting = space.postings.get(term)
                if posting is not None:
                    tf[:, j] = posting.tf_of(rows)
        recorded = np.frombuffer(table.recorded, dtype=np.int64)[rows]
        occurred = np.frombuffer(table.occurred, dtype=np.int64)[rows]
        known = occurred != NO_TIME
        return CandidateColumns(
            ids=list(map(table.ids.__getitem__, rows.tolist())),  # type: ignore[arg-type]
            tf=tf,
            length=np.frombuffer(table.lengths, dtype=np.int32)[rows].astype(np.int64),
            recorded_us=recorded,
            occurred_us=occurred,
            occurred=known,
            when_us=np.where(known, occurred, recorded),
            confidence=np.frombuffer(table.confidence, dtype=np.float64)[rows],
        )

    def supersessions(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[tuple[UUID, UUID]]:
        with self._lock:
            graph = self._space(namespace).graph
            wanted = {i.int for i in ids}
            written_by = as_of.at_us if as_of is not None and as_of.known else None
            pairs = sorted(
                (u, lk[1])
                for u in wanted
                for lk in graph.outgoing(u)
                if lk[2] == "SUPERSEDES"
                and lk[1] in wanted
                and (written_by is None or lk[4] <= written_by)
            )
            return [(UUID(int=u), UUID(int=v)) for u, v in pairs]

    def walk(
        self,
        namespace: str,
        start: Sequence[UUID],
        depth: int,
        max_nodes: int,
        as_of: AsOf | None = None,
    ) -> Walk:
        with self._lock:
            space = self._space(namespace)
            graph = space.graph
            table = space.memories
            starts = {s.int for s in start if s.int in table}
            written_by = as_of.at_us if as_of is not None and as_of.known else None
            frontier = set(starts)
            seen = set(frontier)
            reached: list[tuple[int, int]] = []
            for distance in range(1, depth + 1):
                if not frontier or len(reached) >= max_nodes:
                    break
                layer: set[int] = set()
                for node in frontier:
                    if written_by is None:
                        layer.update(graph.neighbours(node))
                    else:
                        layer.update(lk[1] for lk in graph.out.get(node, ()) if lk[4] <= written_by)
                        layer.update(lk[0] for lk in graph.inn.get(node, ()) if lk[4] <= written_by)
                layer -= seen
                if as_of is not None and layer:
                    row_of = table.row_of
                    rows = np.asarray([row_of[n] for n in layer], dtype=np.int64)
                    keys = table.keys
                    layer = {keys[r] for r in self._visible_rows(space, rows, as_of).tolist()}
                seen |= layer
                reached += [(n, distance) for n in sorted(layer)]
                frontier = layer
            reached = reached[:max_nodes]
            members = starts | {n for n, _ in reached}
            links = self._links_of(
                space,
                [
                    lk
                    for u in members
                    for lk in graph.outgoing(u)
                    if lk[1] in members and (written_by is None or lk[4] <= written_by)
                ],
            )
            return Walk(
                reached=tuple((table[n], d) for n, d in reached),
                links=sort_links(links),
            )

    def next_recorded(self, namespace: str, ids: Sequence[UUID]) -> list[tuple[UUID, Memory]]:
        with self._lock:
            space = self._space(namespace)
            table, order = space.memories, space.order  # (recordedAt micros, id.int), oldest first
            found: list[tuple[UUID, Memory]] = []
            for mid in dict.fromkeys(ids):
                row = table.row_of.get(mid.int)
                if row is None:
                    continue
                after = order.bisect_right((table.recorded[row], mid.int))
                if after < len(order):
                    found.append((mid, table[order[after][1]]))
            return found

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        with self._lock:
            space = self._space(namespace)
            found: dict[tuple[int, int, str], LinkTuple] = {}
            for mid in ids:
                for lk in space.graph.touching(mid.int):
                    found[(lk[0], lk[1], lk[2])] = lk
            return list(sort_links(self._links_of(space, list(found.values()))))

    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        with self._lock:
            return self._space(namespace).beliefs.get(belief_id)

    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        with self._lock:
            return list(self._space(namespace).events.get(run_id, ()))

    def stats(self, namespace: str) -> NamespaceStats:
        with self._lock:
            space = self._space(namespace)
            return NamespaceStats(
                namespace=namespace,
                memories=len(space.memories),
                links=space.graph.count,
                beliefs=len(space.beliefs),
                terms=len(space.postings),
                events=sum(len(ev) for ev in space.events.values()),
            )

    def facet_counts(self, namespace: str, facet: str, top: int) -> FacetCounts:
        with self._lock:
            space = self._spaces.get(namespace)
            if space is None:
                if facet not in FACETS:
                    raise bad_facet(facet)
                return FacetCounts(facet, 0, ())
            return space.facets.top(facet, top)

    def list_memories(
        self,
        namespace: str,
        *,
        after: tuple[datetime, str] | None,
        limit: int,
        kind: str | None,
        tag: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[Memory]:
        with self._lock:
            space = self._space(namespace)
            order = space.order  # (recordedAt micros, id.int), oldest first
            end = (
                len(order)
                if after is None
                else order.bisect_left((micros(after[0]), UUID(after[1]).int))
            )
            table = space.memories
            row_of = table.row_of
            low = None if since is None else micros(since)
            high = None if until is None else micros(until)
            page: list[Memory] = []
            for index in range(end - 1, -1, -1):
                row = row_of[order[index][1]]
                if kind is not None and table.kinds[row] != kind:
                    continue
                if tag is not None and tag not in table.tags[row]:
                    continue
                if low is not None or high is not None:
                    when = table.when(row)
                    if (low is not None and when < low) or (high is not None and when >= high):
                        continue
                page.append(table.memory(row))
                if len(page) == limit:
                    break
            return page

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        """As :meth:`Store.export`: the state at the call, copied under the lock (a few memory
        copies); the memories and links are built from the copy without it."""
        with self._lock:
            space = self._space(namespace)
            table = space.memories.copy()
            keys = [key for _, key in space.order]  # oldest first, as Neo4j exports them
            tuples = list(space.graph.links())
        # Rows are in write order, which an import of older times does not keep.
        row_of = table.row_of
        for key in keys:
            yield table.memory(row_of[key])
        yield from sort_links([make_link(lk, table) for lk in tuples])
