"""The service layer: validation, ids and clocks, events, and the orchestration of store and recall.

Every entry point of graphsvc (CLI, GraphQL, Python API) goes through :class:`MemoryService`. It is
the one place where input is checked against the settings' limits, so every surface refuses the
same things with the same messages.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from graphsvc import validity
from graphsvc.embedding.codes import VectorModel
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.queue import VectorQueue
from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import (
    NAMESPACE_RE,
    AsOf,
    AsOfMode,
    Belief,
    ContextBundle,
    ContextEvent,
    ContextEventKind,
    EraseFilter,
    EraseReceipt,
    ForgetReceipt,
    Link,
    LinkInput,
    Memory,
    MemoryInput,
    MemoryValidity,
    NamespaceStats,
    ReconstructedBelief,
    ValidityInterval,
    WriteResult,
    as_utc,
    construct,
    unicode_problem,
    utcnow,
    uuid_of_int,
)
from graphsvc.prompt import (
    AGENT_EVENT_KINDS,
    DriftReport,
    PromptBundle,
    PromptDefaults,
    PromptInput,
)
from graphsvc.prompt.assembly import finish_prompt, plan_prompt, resolve_window
from graphsvc.prompt.trace import assembled_detail, drift_report
from graphsvc.recall import BundleRequest, Stage, build_belief, build_bundle, get_stage
from graphsvc.recall.pipeline import ReadAheadPool, RecallPipeline
from graphsvc.recall.policy import RecallPolicy
from graphsvc.requests import BundleQuery, ReconstructQuery
from graphsvc.settings import Settings
from graphsvc.store.base import Store, nothing_to_erase
from graphsvc.store.journal import isoformats
from graphsvc.text import analyse_many, estimate_tokens

# Ids derived from content live in this UUIDv5 namespace, so that re-ingesting a file is a no-op.
CONTENT_ID_NAMESPACE = UUID("6f1c1e0e-5b7a-4d0e-9a53-9b8f3f2c6a10")
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


_CONTENT_ID_PREFIX = CONTENT_ID_NAMESPACE.bytes
# UUID(bytes=..., version=5): clear the variant and version bits, then set RFC 4122's variant
# and version 5 (what uuid.uuid5 does through UUID.__init__).
_VERSION_MASK = ~((0xC000 << 48) | (0xF000 << 64))
_VERSION_BITS = (0x8000 << 48) | (5 << 76)


def content_id(namespace: str, item: MemoryInput) -> UUID:
    """The id of a memory written without one: a UUIDv5 of its namespace and content (the
    item's own ``id``, if any, plays no part).

    Fields are length-prefixed (``len:value``; a missing value is ``-``), so no two different
    contents share a name whatever characters they hold. The same UUID as
    ``uuid.uuid5(CONTENT_ID_NAMESPACE, name)``, without its checks (one per memory written).
    """
    occurred = item.occurred_at
    return _derived_id(_head(namespace), item, None if occurred is None else occurred.isoformat())


def content_ids(namespace: str, items: Sequence[MemoryInput]) -> list[UUID]:
    """Each item's id: its own, or :func:`content_id` (a write's batch at once: the times'
    ISO forms from one call)."""
    head = _head(namespace)
    times = iter(isoformats([t for item in items if (t := item.occurred_at) is not None]))
    ids: list[UUID] = []
    for item in items:
        iso = None if item.occurred_at is None else next(times)  # one per timed item, id or not
        ids.append(item.id or _derived_id(head, item, iso))
    return ids


def _head(namespace: str) -> str:
    return f"{len(namespace)}:{namespace}"


def _derived_id(head: str, item: MemoryInput, occurred: str | None) -> UUID:
    """:func:`content_id` of ``item`` in the namespace whose prefix is ``head``, given its
    ``occurredAt`` in ISO form."""
    kind, text, source = item.kind, item.text, item.source
    name = (
        f"{head}{len(kind)}:{kind}{len(text)}:{text}"
        f"{'-' if occurred is None else f'{len(occurred)}:{occurred}'}"
        f"{'-' if source is None else f'{len(source)}:{source}'}"
    )
    if tags := item.tags:
        name += "".join([f"{len(tag)}:{tag}" for tag in tags])
    if item.valid_from is not None or item.valid_until is not None:
        # Only a memory with a validity names it (after a marker no tag list can end with), so
        # the ids of memories without one are those graphsvc always derived.
        name += "\x1fvalid" + "".join(
            "-" if t is None else f"{len(iso := t.isoformat())}:{iso}"
            for t in (item.valid_from, item.valid_until)
        )
    digest = hashlib.sha1(_CONTENT_ID_PREFIX + name.encode("utf-8"), usedforsecurity=False)
    return uuid_of_int((int.from_bytes(digest.digest()[:16]) & _VERSION_MASK) | _VERSION_BITS)


#: Members of a fact's history at most (:meth:`MemoryService.history`).
HISTORY_MAX = 200

_NIL_ID = str(UUID(int=0))


def check_interval(item: MemoryInput, recorded_at: datetime, position: int | None = None) -> None:
    """Refuse a memory that would never be true: a ``validUntil`` at or before its start, which
    is its ``validFrom``, else its ``occurredAt``, else when it is written (``recorded_at``).
    (``validFrom`` against ``validUntil`` is checked by :class:`MemoryInput` itself.)

    Raises:
        BadInputError: the message names the field, the start it was checked against and, for
            a memory of a batch (``position``), which one.
    """
    end = item.valid_until
    if end is None:
        return
    if item.valid_from is not None:
        start, what = item.valid_from, "its validFrom"
    elif item.occurred_at is not None:
        start, what = item.occurred_at, "its occurredAt"
    else:
        start, what = recorded_at, "when it is written, as it has no validFrom or occurredAt"
    if end > start:
        return
    where = "" if position is None else f"memory {position} of the write: "
    raise BadInputError(
        f"{where}validUntil ({end.isoformat()}) must be after the memory's start, {what} "
        f"({start.isoformat()}): such a memory would never be true. Give validFrom (when it "
        "became true) or a later validUntil; nothing was written"
    )


def restored_times(
    now: Sequence[datetime], restored: Sequence[datetime | None], field: str
) -> list[datetime]:
    """The times of a write whose items may carry the time an export recorded (``restored``,
    None: the write's own time, ``now``).

    Raises:
        BadInputError: the lengths differ, or a restored time is later than the write (a time
            that has not come cannot have been recorded).
    """
    if len(restored) != len(now):
        raise BadInputError(f"{len(restored)} {field} times for {len(now)} items")
    times: list[datetime] = []
    for at, (mine, theirs) in enumerate(zip(now, restored, strict=True)):
        if theirs is None:
            times.append(mine)
            continue
        theirs = as_utc(theirs)
        if theirs > mine:
            raise BadInputError(
                f"item {at}: {field} ({theirs.isoformat()}) is later than now "
                f"({mine.isoformat()}): an import restores times that were recorded, never "
                "future ones"
            )
        times.append(theirs)
    return times


def known_bound(at: datetime) -> tuple[datetime, str]:
    """The page key (:meth:`Store.list_memories` ``after``) below which exactly the memories
    recorded at or before ``at`` lie: one microsecond later (the stores' precision) with the
    least id, which no memory's id is below."""
    return at + timedelta(microseconds=1), _NIL_ID


class MemoryService:
    """graphsvc's operations on one store.

    Args:
        store: an opened store.
        settings: limits and defaults.
        clock: the time source (tests pass a fixed one). ``recordedAt`` never goes backwards
            within one service, so recorded order is write order.
        dense: the encoder for recall by meaning (:class:`DenseRecall`); none: lexical-only.
        policy: the recall policy; none: the one the settings describe
            (:meth:`RecallPolicy.from_settings`).
    """

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Callable[[], datetime] = utcnow,
        dense: DenseRecall | None = None,
        policy: RecallPolicy | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.dense = dense if dense is not None else DenseRecall(None)
        self._clock = clock
        self._last = datetime.min.replace(tzinfo=utcnow().tzinfo)
        self._clock_lock = threading.Lock()
        self.policy = policy if policy is not None else RecallPolicy.from_settings(settings)
        self._read_ahead = ReadAheadPool(2 * settings.api_threads)
        #: The ranking pipeline: every bundle and reconstruct ranks through it.
        self.recall = RecallPipeline(store, self.dense, self.policy, self._read_ahead)
        #: The vector queue's drainer (:mod:`graphsvc.vector_queue`): a server starts it
        #: (:meth:`VectorQueue.start`); :meth:`embed` drains with it offline.
        self.vector_queue = VectorQueue(store, self.dense, settings)

    def _now(self, count: int = 1) -> datetime:
        """A timestamp after every one handed out before; ``count`` reserves that many
        consecutive microseconds (one per memory of a batch, so recorded order is total)."""
        with self._clock_lock:
            now = self._clock()
            if now <= self._last:
                now = self._last + timedelta(microseconds=1)
            self._last = now + timedelta(microseconds=count - 1)
            return now

    def _instant(self) -> datetime:
        """Now, for a read: never before a time this service handed out, so that nothing it
        recorded is in the future of a read that follows."""
        with self._clock_lock:
            return max(self._clock(), self._last)

    # -- validation ------------------------------------------------------------------------------

    @staticmethod
    def check_namespace(namespace: str) -> str:
        if not NAMESPACE_RE.match(namespace):
            raise BadInputError(
                f"invalid namespace {namespace!r}: use 1-64 letters, digits, '_' or '-'"
            )
        return namespace

    @staticmethod
    def check_run_id(run_id: str) -> str:
        if not _RUN_ID_RE.match(run_id):
            raise BadInputError(
                f"invalid run id {run_id!r}: use 1-128 letters, digits, '_', '.', ':' or '-'"
            )
        return run_id

    def _check_text(self, text: str, what: str) -> None:
        if not text or text.isspace():  # as `not text.strip()`, without the copy
            raise BadInputError(f"{what} is empty: send some text")
        problem = unicode_problem(text)
        if problem is not None:
            raise BadInputError(f"{what}: {problem}")
        if len(text) > self.settings.max_text_chars:
            raise LimitExceededError(
                f"{what} has {len(text)} characters; the limit is {self.settings.max_text_chars} "
                "(GRAPHSVC_MAX_TEXT_CHARS): split it into several memories"
            )

    @staticmethod
    def _in_range(name: str, value: int | float, low: int | float, high: int | float) -> None:
        if value < low:
            raise BadInputError(f"{name} must be at least {low}, got {value}")
        if value > high:
            raise LimitExceededError(f"{name} must be at most {high}, got {value}")

    # -- writes ----------------------------------------------------------------------------------

    def check_input(self, item: MemoryInput) -> None:
        """Check a memory input against the limits of the settings."""
        self._check_text(item.text, "memory text")

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
        start = self._now(len(items))
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
                start = self._now(len(batch))
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
                for m in self._with_ends(
                    namespace, self.store.get_memories(namespace, result.unchanged)
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
            at = self._now()
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
        return stored, result

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

    def link(self, namespace: str, item: LinkInput) -> Link:
        """Link two existing memories of the namespace."""
        return self.link_many(namespace, [item])[0]

    def link_many(self, namespace: str, items: Sequence[LinkInput]) -> list[Link]:
        """Create links, all or nothing: both ends must exist, no self-link, no SUPERSEDES cycle.
        Returns them as stored (a link that existed keeps its ``createdAt``)."""
        links = self.add_links(namespace, items)
        stored = {
            (lk.source, lk.target, lk.kind): lk
            for lk in self.store.links_of(namespace, sorted({i.source for i in items}, key=str))
        }
        return [stored[(lk.source, lk.target, lk.kind)] for lk in links]

    def add_links(
        self,
        namespace: str,
        items: Sequence[LinkInput],
        created: Sequence[datetime | None] | None = None,
    ) -> list[Link]:
        """As :meth:`link_many`, without reading the links back (for bulk loads). ``created``:
        a ``createdAt`` to restore per link (None: the write's time), for an import of what an
        export recorded."""
        self.check_namespace(namespace)
        if len(items) > self.settings.max_batch:
            raise LimitExceededError(
                f"{len(items)} links in one write; the limit is {self.settings.max_batch}"
            )
        for item in items:
            if item.source == item.target:
                raise BadInputError(f"cannot link memory {item.source} to itself")
        now = self._now()
        times = [now] * len(items)
        if created is not None:
            times = restored_times(times, created, "createdAt")
        links = [
            Link(
                source=i.source,
                target=i.target,
                kind=i.kind,
                weight=i.weight,
                note=i.note,
                created_at=at,
            )
            for i, at in zip(items, times, strict=True)
        ]
        self.store.add_links(namespace, links)
        return links

    def forget(self, namespace: str, memory_id: UUID) -> ForgetReceipt:
        """Remove a memory, its links and the beliefs built on it; say what was removed."""
        self.check_namespace(namespace)
        return self.store.forget(namespace, memory_id, at=self._now())

    def erase(
        self,
        namespace: str,
        *,
        everything: bool = False,
        tag: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        progress: Callable[[EraseReceipt], None] | None = None,
    ) -> EraseReceipt:
        """Erase the whole namespace, or every memory matching all the filters given (a tag, a
        source, a time range ``since <= when < until`` with ``when`` = occurredAt, else
        recordedAt), with their links and the beliefs built on them; say what was removed.

        Term statistics stay exact. Context events are kept, but every id of an erased memory
        in their detail becomes ``[erased]``; ``everything`` also removes the namespace's runs,
        context events and statistics. Large erases work in batches of GRAPHSVC_ERASE_BATCH
        (Neo4j), each atomic: an erase that was interrupted, or that answered ``complete=False``
        at GRAPHSVC_ERASE_TIME_BUDGET, is finished by calling it again with the same input.

        Args:
            progress: called with the receipt so far after each durable batch.

        Raises:
            BadInputError: nothing to erase was named, ``everything`` was combined with a
                filter, a blank tag or source, or an empty time range.
        """
        self.check_namespace(namespace)
        spec = EraseFilter(everything=everything, tag=tag, source=source, since=since, until=until)
        if spec.is_empty:
            raise nothing_to_erase()
        if everything and any(v is not None for v in (tag, source, since, until)):
            raise BadInputError(
                "everything=true erases the whole namespace: send it without tag, source, since "
                "or until (or drop everything to erase only what the filters match)"
            )
        for name, value in (("tag", tag), ("source", source)):
            if value is not None and not value.strip():
                raise BadInputError(f"{name} is empty: name the {name} to erase, or leave it out")
        if spec.since is not None and spec.until is not None and spec.since >= spec.until:
            raise BadInputError(
                f"since ({spec.since.isoformat()}) must be before until ({spec.until.isoformat()})"
            )
        s = self.settings
        return self.store.erase(
            namespace,
            spec,
            at=self._now(),
            batch_size=s.erase_batch,
            time_budget=s.erase_time_budget,
            progress=progress,
        )

    # -- reads -----------------------------------------------------------------------------------

    def _with_ends(
        self, namespace: str, memories: Sequence[Memory], when: AsOf | None = None
    ) -> list[Memory]:
        """``memories`` with ``invalidatedAt`` set to when each stops being true (its
        ``validUntil`` or the start of the earliest memory that SUPERSEDES it; ``when`` KNOWN:
        as known then): computed from the links when read, never stored (one store call)."""
        if not memories:
            return list(memories)
        successors = self.store.successors(namespace, [m.id for m in memories], when)
        end_of = validity.ends(memories, successors)
        return [
            m
            if end_of[m.id] == m.invalidated_at
            else m.model_copy(update={"invalidated_at": end_of[m.id]})
            for m in memories
        ]

    def _validities(
        self, namespace: str, memories: Sequence[Memory], when: AsOf | None
    ) -> dict[UUID, MemoryValidity]:
        """Each memory's effective validity at the instant a read answers for: ``when``, else
        now (:func:`graphsvc.validity.validities`; one store call)."""
        if not memories:
            return {}
        successors = self.store.successors(namespace, [m.id for m in memories], when)
        return validity.validities(
            memories, successors, self._instant() if when is None else when.at
        )

    def get_memory(self, namespace: str, memory_id: UUID) -> Memory | None:
        """A memory of the namespace, or None; ``invalidatedAt`` says when it stops being true."""
        found = self.get_memories(namespace, [memory_id])
        return found[0] if found else None

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        """The namespace's memories with these ids, in the order asked; ``invalidatedAt`` says
        when each stops being true (:meth:`_with_ends`)."""
        self.check_namespace(namespace)
        return self._with_ends(namespace, self.store.get_memories(namespace, ids))

    def history(self, namespace: str, memory_id: UUID) -> list[ValidityInterval]:
        """A memory's chain of supersessions, both ways, oldest first, each member with its
        effective validity (:func:`graphsvc.validity.history`); empty when it is not stored."""
        self.check_namespace(namespace)
        memories, links = self.store.supersession_chain(namespace, memory_id, HISTORY_MAX)
        return [
            interval.model_copy(
                update={
                    "memory": interval.memory.model_copy(
                        update={"invalidated_at": interval.valid_until}
                    )
                }
            )
            for interval in validity.history(memories, links)
        ]

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        """Every link touching one of ``ids`` (one store call)."""
        self.check_namespace(namespace)
        return self.store.links_of(namespace, ids)

    def list_memories(
        self,
        namespace: str,
        *,
        after: tuple[datetime, str] | None = None,
        limit: int,
        kind: str | None = None,
        tag: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        known_as_of: datetime | None = None,
    ) -> list[Memory]:
        """A page of memories, newest first (see :meth:`Store.list_memories`).

        ``known_as_of``: only memories recorded at or before that instant (the KNOWN view of
        the past: the list as memory held it then). The list is ordered by ``recordedAt``, so
        this is a bound on the page's key, and a page still costs the page.

        Raises:
            BadInputError: the page size is below 1, or ``known_as_of`` has no time zone.
        """
        self.check_namespace(namespace)
        if limit < 1:
            raise BadInputError(f"the page size must be at least 1, got {limit}")
        if known_as_of is not None:
            if known_as_of.utcoffset() is None:
                raise BadInputError(
                    f"knownAsOf {known_as_of.isoformat()} has no time zone: give one "
                    "(2024-03-11T00:00:00Z)"
                )
            bound = known_bound(known_as_of.astimezone(UTC))
            after = bound if after is None else min(after, bound)
        page = self.store.list_memories(
            namespace, after=after, limit=limit, kind=kind, tag=tag, since=since, until=until
        )
        when = None if known_as_of is None else AsOf(at=known_as_of, mode=AsOfMode.KNOWN)
        return self._with_ends(namespace, page, when)

    def min_score_for(self, stage: Stage) -> float:
        """The abstention threshold of a bundle at ``stage`` whose request gives none:
        ``GRAPHSVC_DEFAULT_MIN_SCORE`` when set, else the stage's own."""
        chosen = self.settings.default_min_score
        return stage.min_score if chosen is None else chosen

    def bundle(
        self,
        namespace: str,
        request: BundleQuery | str,
        *,
        run_id: str | None = None,
        step: int = 0,
        **options: Any,
    ) -> ContextBundle:
        """What memory offers a prompt for a question under a token budget (docs/design.md):
        ``request`` is a :class:`~graphsvc.requests.BundleQuery`, or the question with the
        query's other fields as ``options`` (``budget_tokens=500``). With ``as_of``, as memory
        would have answered then (``as_of_mode`` KNOWN: what was recorded by then; VALID, the
        default: what was true then). With ``run_id``, a memory_recall event is recorded at
        ``step``.

        Raises:
            BadInputError: an invalid field, or one below its bound.
            LimitExceededError: a field above the settings' limit.
        """
        ask = BundleQuery.of(request, options)
        s = self.settings
        self.check_namespace(namespace)
        self._check_text(ask.query, "query")
        budget = s.default_budget_tokens if ask.budget_tokens is None else ask.budget_tokens
        self._in_range("budgetTokens", budget, 1, s.max_budget_tokens)
        stage_name = ask.stage or "default"
        chosen = get_stage(stage_name)
        floor = self.min_score_for(chosen) if ask.min_score is None else ask.min_score
        if not 0.0 <= floor <= 1.0:
            raise BadInputError(f"minScore must be between 0 and 1, got {floor}")
        cap = s.default_max_capsules if ask.max_capsules is None else ask.max_capsules
        self._in_range("maxCapsules", cap, 1, s.max_capsules_limit)
        when = ask.when
        ranking = self.recall.rank(namespace, ask.query, stage_name, as_of=when)
        spec = BundleRequest(
            ask.query,
            budget,
            floor,
            cap,
            chosen,
            self.policy.bundle.relative_floor,
            ranking.retrieval,
            when,
        )
        valid = self._validities(namespace, [item.memory for item in ranking.ranked], when)
        result = build_bundle(
            spec,
            ranking.terms,
            ranking.stats,
            ranking.ranked,
            ranking.top_score,
            ranking.evidence,
            valid,
        )
        if ranking.pending_vectors or ranking.retrieval_note is not None:
            result = result.model_copy(
                update={
                    "pending_vectors": ranking.pending_vectors,
                    "retrieval_note": ranking.retrieval_note,
                }
            )
        if run_id is not None:
            self._recall_event(namespace, run_id, step, result)
        return result

    def _recall_event(self, namespace: str, run_id: str, step: int, result: ContextBundle) -> None:
        self.check_run_id(run_id)
        detail = (
            f"bundle for {result.query!r}: {len(result.capsules)} capsule(s), "
            f"{len(result.excluded)} excluded, skipped={str(result.skipped).lower()}, "
            f"coverage {result.evidence_coverage:.3f}"
        )
        self.store.append_event(
            namespace,
            run_id,
            step=step,
            kind=ContextEventKind.MEMORY_RECALL,
            detail=detail,
            est_tokens=result.used_tokens,
            at=self._now(),
        )

    def reconstruct(
        self, namespace: str, request: ReconstructQuery | str, **options: Any
    ) -> ReconstructedBelief:
        """The top-k hits for a cue and the graph around them, summarised (docs/design.md):
        ``request`` is a :class:`~graphsvc.requests.ReconstructQuery`, or the cue with the
        query's other fields as ``options``; ``as_of``/``as_of_mode`` as for :meth:`bundle` (the
        walk too sees only what was visible then).

        Raises:
            BadInputError: an invalid field, or one below its bound.
            LimitExceededError: a field above the settings' limit.
        """
        ask = ReconstructQuery.of(request, options)
        s = self.settings
        self.check_namespace(namespace)
        self._check_text(ask.cue, "cue")
        k = s.default_k if ask.k is None else ask.k
        self._in_range("k", k, 1, s.max_k)
        depth = s.default_depth if ask.depth is None else ask.depth
        self._in_range("depth", depth, 0, s.max_depth)
        when = ask.when
        hits, walk = self.recall.hits_and_walk(namespace, ask.cue, k, depth, when)
        memories = [item.memory for item in hits] + [memory for memory, _ in walk.reached]
        valid = self._validities(namespace, memories, when)
        belief = build_belief(ask.cue, hits, walk, valid, when)
        ends = {v.memory_id: v.valid_until for v in belief.validity}
        return belief.model_copy(
            update={
                "memories": tuple(
                    m.model_copy(update={"invalidated_at": ends.get(m.id)}) for m in belief.memories
                )
            }
        )

    def reconstruct_and_store(
        self,
        namespace: str,
        request: ReconstructQuery | str,
        *,
        run_id: str | None = None,
        step: int = 0,
        **options: Any,
    ) -> ReconstructedBelief:
        """As :meth:`reconstruct`, and store the belief (linked to its sources) and, for a run, a
        ``memory_recall`` event."""
        if run_id is not None:
            self.check_run_id(run_id)
        ask = ReconstructQuery.of(request, options)
        belief = self.reconstruct(namespace, ask)
        cue = ask.cue
        now = self._now()
        belief_id = uuid.uuid5(
            CONTENT_ID_NAMESPACE,
            json.dumps([namespace, cue, now.isoformat(), [str(i) for i in belief.source_ids]]),
        )
        stored_id: UUID | None = None
        if belief.source_ids:
            stored_id = belief_id
            self.store.save_belief(
                Belief(
                    id=belief_id,
                    namespace=namespace,
                    cue=cue,
                    summary=belief.summary,
                    confidence=belief.confidence,
                    created_at=now,
                    source_ids=belief.source_ids,
                    linked_context_ids=belief.linked_context_ids,
                )
            )
        if run_id is not None:
            self.store.append_event(
                namespace,
                run_id,
                step=step,
                kind=ContextEventKind.MEMORY_RECALL,
                detail=f"reconstruct {cue!r}: {len(belief.source_ids)} source(s), "
                f"{len(belief.linked_context_ids)} linked, confidence {belief.confidence:.3f}",
                est_tokens=estimate_tokens(belief.summary),
                at=now,
            )
        return belief.model_copy(update={"belief_id": stored_id})

    def record_event(
        self,
        namespace: str,
        run_id: str,
        step: int,
        kind: str,
        detail: str | None = None,
        est_tokens: int | None = None,
    ) -> ContextEvent:
        """Record a context decision of an agent harness."""
        self.check_namespace(namespace)
        self.check_run_id(run_id)
        known = [k.value for k in ContextEventKind]
        if kind not in known:
            raise BadInputError(f"unknown event kind {kind!r}: use one of {', '.join(known)}")
        if step < 0:
            raise BadInputError(f"step must be at least 0, got {step}")
        return self.store.append_event(
            namespace,
            run_id,
            step=step,
            kind=kind,
            detail=detail,
            est_tokens=est_tokens,
            at=self._now(),
        )

    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        self.check_namespace(namespace)
        self.check_run_id(run_id)
        return self.store.events(namespace, run_id)

    # -- prompt assembly and the trace (docs/design.md; graphsvc/prompt/) ---

    def prompt_defaults(self) -> PromptDefaults:
        """The window settings a promptBundle request leaves out, from the settings."""
        s = self.settings
        return PromptDefaults(
            context_window=s.prompt_context_window,
            reserved_completion_tokens=s.prompt_reserved_completion_tokens,
            memory_budget_share=s.prompt_memory_budget_share,
            max_transcript_entries=s.prompt_transcript_tail,
            max_context_file_tokens=s.prompt_context_file_max_tokens,
        )

    def prompt_bundle(self, namespace: str, request: PromptInput) -> PromptBundle:
        """Assemble a prompt (:mod:`graphsvc.prompt`): the caller's parts, memory for the user
        turn under the ledger's budget, the system prompt and the messages. With a ``run_id``,
        the recall records a ``memory_recall`` event and the assembly an ``assembled`` one whose
        ``est_tokens`` is the ledger's estimate.

        Raises:
            BadInputError: an invalid namespace, run id, window or memory setting.
            LimitExceededError: a setting above a service limit, or a memory query too long.
        """
        s = self.settings
        self.check_namespace(namespace)
        if request.run_id is not None:
            self.check_run_id(request.run_id)
        window = resolve_window(
            request,
            self.prompt_defaults(),
            max_budget_tokens=s.max_budget_tokens,
            default_max_capsules=s.default_max_capsules,
            max_capsules_limit=s.max_capsules_limit,
        )
        today = self._clock().date()  # the day in UTC: the clock is UTC
        plan = plan_prompt(request, window, today, max_query_chars=s.max_text_chars)
        memory = None
        if plan.bundle_budget > 0:
            ask = BundleQuery(
                query=plan.memory_query,
                budget_tokens=plan.bundle_budget,
                stage=request.memory_stage,
                min_score=request.memory_min_score,
                max_capsules=window.max_capsules,
                as_of=request.memory_as_of,
                as_of_mode=request.memory_as_of_mode,
            )
            memory = self.bundle(namespace, ask, run_id=request.run_id, step=request.step)
        result = finish_prompt(plan, memory)
        if request.run_id is None:
            return result
        event = self.store.append_event(
            namespace,
            request.run_id,
            step=request.step,
            kind=ContextEventKind.ASSEMBLED,
            detail=assembled_detail(result),
            est_tokens=result.context_ledger.estimated_input_tokens,
            at=self._now(),
        )
        return result.model_copy(update={"assembled_event": event})

    def report_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        """Put the provider's count of input tokens on the step's (latest) ``assembled`` event.

        Raises:
            NotFoundError: the step has no ``assembled`` event (call promptBundle with this runId
                and step first).
            BadInputError: an invalid run id, a negative step or count.
        """
        self.check_namespace(namespace)
        self.check_run_id(run_id)
        if step < 0:
            raise BadInputError(f"step must be at least 0, got {step}")
        if reported_tokens < 0:
            raise BadInputError(f"reportedTokens must be at least 0, got {reported_tokens}")
        return self.store.set_reported_tokens(namespace, run_id, step, reported_tokens)

    def record_agent_event(
        self,
        namespace: str,
        run_id: str,
        step: int,
        kind: str,
        detail: str | None = None,
        est_tokens: int | None = None,
    ) -> ContextEvent:
        """Record a decision of an agent harness: reread, reread_refused, served, replan or
        stalled (graphsvc records the other kinds itself).

        Raises:
            BadInputError: another kind (the message lists these), a negative count.
            LimitExceededError: a detail longer than GRAPHSVC_MAX_TEXT_CHARS.
        """
        known = [k.value for k in AGENT_EVENT_KINDS]
        if kind not in known:
            raise BadInputError(
                f"unknown event kind {kind!r}: use one of {', '.join(known)} (graphsvc records "
                "memory_write, memory_recall, memory_evict and assembled itself)"
            )
        limit = self.settings.max_text_chars
        if detail is not None and len(detail) > limit:
            raise LimitExceededError(
                f"detail has {len(detail)} characters; the limit is {limit} "
                "(GRAPHSVC_MAX_TEXT_CHARS)"
            )
        if detail is not None and (problem := unicode_problem(detail)) is not None:
            raise BadInputError(f"detail: {problem}")
        if est_tokens is not None and est_tokens < 0:
            raise BadInputError(f"estTokens must be at least 0, got {est_tokens}")
        return self.record_event(namespace, run_id, step, kind, detail, est_tokens)

    def drift(self, namespace: str, run_id: str) -> DriftReport:
        """A run's estimated against reported tokens, per step and overall."""
        return drift_report(run_id, self.events(namespace, run_id))

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
            self._in_range("batch", batch, 1, 10_000)
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


__all__ = ["MemoryService", "content_id"]
