"""The vector queue: a write is acknowledged at lexical speed, and its memories' vectors follow.

A memory waits for its vector from the write that stores it until a vector is stored for it
(``GRAPHSVC_EMBED_WRITES=queue``, the default). The queue is the stores' own index of the
waiting memories (:meth:`Store.pending_vectors`), so it is as durable as the memories: nothing
is kept only in a process. :class:`VectorQueue` drains it: it reads a step of the oldest waiting
memories, encodes them on threads of its own (in batches where the model allows it: the
embedder encodes a text alone where the registry says its vector depends on the batch) and
stores their codes in one atomic write that checks, per memory, that it still waits and is the
memory that was read (:meth:`Store.fill_vectors`), and that the namespace's model is still the
one encoded with. So a drain stopped anywhere (a stop, a crash, kill -9) resumes where the
stores say, and two drainers never write one vector twice or a stale model's codes.

Who drains it:

- a server (``graphsvc serve``, ``graphsvc mcp``) runs :meth:`VectorQueue.start`: a thread that
  drains every namespace whose vectors are this encoder's (the first write with an encoder
  declares its model; a namespace written without one waits for ``graphsvc embed``, as it
  always did), one step per namespace in turn, woken by
  this process's writes and looking for other processes' every ``GRAPHSVC_EMBED_QUEUE_POLL``
  seconds. One process at a time drains a store: it holds a lease (:meth:`Store.take_vector_queue`,
  :data:`LEASE_SECONDS`), renewed while it runs; another waits in standby and takes over when
  the lease lapses (the holder was stopped or killed). Its encoder threads run at a lower
  priority (``GRAPHSVC_EMBED_QUEUE_NICE``), so requests keep the cores they need.
- ``graphsvc embed`` (and ``graphsvc ingest`` when no server runs the queue) drains it offline:
  :meth:`VectorQueue.drain`, with a progress bar.

A memory whose text the encoder fails on is left waiting (it stays in the store's queue) and
skipped by this process, so one bad text cannot stop the queue; the failure is logged and
reported by :meth:`VectorQueue.status`.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from graphsvc.embedding.codes import VectorModel
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.errors import BadInputError, GraphsvcError
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.vectors import PendingVector, VectorBacklog

log = logging.getLogger("graphsvc.service.vector_queue")

#: How long a lease on a store's vector queue lasts unless renewed (seconds): how soon another
#: process takes over from a drainer that was killed.
LEASE_SECONDS = 30.0
#: The longest wait after a failure (the store unavailable, the model failing), in seconds;
#: the wait doubles from the poll interval up to it.
MAX_BACKOFF = 60.0
#: Memories one process skips at most after the encoder failed on them alone (past it, the
#: queue stops and says why: a model that fails on everything is a failure, not bad texts).
MAX_SKIPPED = 1_000
#: Seconds of recent steps the reported rate is averaged over.
RATE_WINDOW = 60.0
#: Texts of one encoder call of the queue: between two, a stopping queue gives up its step, so a
#: stop waits for one call, not a step.
ENCODE_CHUNK = 16


class QueueStoppedError(Exception):
    """The queue was told to stop during a step: the step is abandoned (its memories stay in
    the store's queue)."""


State = Literal["off", "stopped", "starting", "idle", "draining", "standby", "failing"]


@dataclass(frozen=True)
class QueueStatus:
    """What the vector queue of this process is doing.

    ``state``: ``off`` (no encoder: recall is lexical), ``stopped`` (not running in this
    process: ``graphsvc embed`` or a server drains it), ``starting`` (running, before its first
    look at the store), ``idle`` (running, nothing waits),
    ``draining``, ``standby`` (running, another process holds the lease and drains it) or
    ``failing`` (running, backing off after an error: ``error`` says which). ``pending``: the
    memories waiting in the namespaces this encoder drains, at the last look (None before the
    first). ``owner``: who drains the store's queue (this process's name when it does).
    ``stored``: vectors this process stored since it started; ``rate``: vectors a second over
    the last minute's steps; ``skipped``: memories the encoder failed on, left waiting.
    """

    state: State
    pending: int | None
    owner: str | None
    stored: int
    rate: float
    skipped: int
    error: str | None


_QUEUES = itertools.count(1)


def process_name(role: str, number: int = 1) -> str:
    """A name for a queue of this process as a holder of a store's lease: its role, pid and
    host (and its ``number`` after the first queue of the process, so no two share a name)."""
    suffix = "" if number == 1 else f", queue {number}"
    return f"{role} (pid {os.getpid()} on {socket.gethostname()}{suffix})"


def lower_priority(nice: int) -> None:
    """Lower the calling thread's scheduling priority by ``nice`` (Linux, where a thread is a
    task with a priority of its own); nothing elsewhere, or when the system refuses."""
    if nice <= 0 or not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:  # a sandbox that forbids it: run at the same priority
        pass


class VectorQueue:
    """Drains the vector queue of one store with one encoder (see the module docstring).

    Args:
        store: an opened store.
        dense: the encoder (without a model the queue is ``off``).
        settings: ``embed_queue_batch``, ``embed_queue_poll``, ``embed_queue_nice`` and
            ``embed_workers`` (the encoder threads).
        role: what this process is, in its name as the lease's holder (:attr:`owner`).
        lease_seconds: how long a lease lasts unless renewed (:data:`LEASE_SECONDS`).
    """

    def __init__(
        self,
        store: Store,
        dense: DenseRecall,
        settings: Settings,
        *,
        role: str = "graphsvc",
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.dense = dense
        self.batch = settings.embed_queue_batch
        self.poll = settings.embed_queue_poll
        self.nice = settings.embed_queue_nice
        self.workers = settings.embed_workers
        self.role = role
        self.lease_seconds = lease_seconds
        self._number = next(_QUEUES)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._niced_pool = False
        self._renewed = -lease_seconds  # time.monotonic() of the last renewal
        self._state: State = "stopped"
        self._pending: int | None = None
        self._holder: str | None = None
        self._stored = 0
        self._steps: deque[tuple[float, int]] = deque()  # (time.monotonic(), stored) per step
        self._skipped: dict[str, set[int]] = {}  # namespace -> ids the encoder failed on
        self._error: str | None = None

    @property
    def owner(self) -> str:
        """This queue's name as the holder of the store's lease (:func:`process_name`)."""
        return process_name(self.role, self._number)

    # -- one step ---------------------------------------------------------------------------------

    def step(self, namespace: str, model: VectorModel, limit: int | None = None) -> tuple[int, int]:
        """Encode the oldest ``limit`` (default ``embed_queue_batch``) memories of the
        namespace that wait for a vector and store their codes of ``model`` (which must be the
        encoder's). Returns how many were read and how many stored (fewer when some were
        forgotten or given a vector meanwhile, none when the namespace's model changed).

        Raises:
            GraphsvcError: the store failed, or the encoder failed on every memory read.
        """
        _, taken, stored = self._step(namespace, model, limit)
        return taken, stored

    def _step(
        self,
        namespace: str,
        model: VectorModel,
        limit: int | None,
        stop: threading.Event | None = None,
    ) -> tuple[UUID | None, int, int]:
        """:meth:`step`, and the id of the first memory it read (None: none); given up
        between two encoder calls once ``stop`` is set.

        Raises:
            QueueStoppedError: ``stop`` was set (nothing of the step is stored).
        """
        limit = self.batch if limit is None else limit
        skipped = self._skipped.get(namespace, set())
        items = [
            item
            for item in self.store.pending_vectors(namespace, limit + len(skipped))
            if item.id.int not in skipped
        ][:limit]
        if not items:
            return None, 0, 0
        encoded = self._encode(namespace, items, stop)
        stored = self.store.fill_vectors(namespace, model, encoded) if encoded else 0
        with self._lock:
            self._stored += stored
            now = time.monotonic()
            self._steps.append((now, stored))
            while self._steps and self._steps[0][0] < now - RATE_WINDOW:
                self._steps.popleft()
        return items[0].id, len(items), stored

    def _encode(
        self, namespace: str, items: Sequence[PendingVector], stop: threading.Event | None
    ) -> list[tuple[PendingVector, bytes]]:
        """The codes of each item's text, on this queue's threads; an item the encoder fails
        on alone is skipped from now on (and left waiting in the store).

        Raises:
            GraphsvcError: the encoder failed on every item (the model, not the texts).
        """
        try:
            codes = self._codes([item.text for item in items], stop)
            return list(zip(items, codes, strict=True))
        except GraphsvcError as exc:
            if len(items) == 1:
                self._skip(namespace, items[0], exc)
                return []
            failure = exc
        # One text may be the cause: try each alone, so the others get their vectors.
        done: list[tuple[PendingVector, bytes]] = []
        failed: list[PendingVector] = []
        for item in items:
            try:
                done.append((item, self.dense.codes([item.text], workers=1)[0]))
            except GraphsvcError:
                failed.append(item)
        if not done:
            raise failure
        for item in failed:
            self._skip(namespace, item, failure)
        return done

    def _skip(self, namespace: str, item: PendingVector, exc: GraphsvcError) -> None:
        skipped = self._skipped.setdefault(namespace, set())
        if sum(map(len, self._skipped.values())) >= MAX_SKIPPED:
            raise GraphsvcError(
                f"the encoder failed on {MAX_SKIPPED} memories: stopping the vector queue ({exc})"
            ) from exc
        skipped.add(item.id.int)
        log.error(
            "the encoder failed on memory %s of namespace %r; it stays without a vector (found "
            "by words only) until the process restarts: %s",
            item.id,
            namespace,
            exc,
        )

    def _codes(self, texts: list[str], stop: threading.Event | None) -> list[bytes]:
        """The stored codes of memories' texts, split over ``workers`` threads of this queue,
        each encoding its part in one-thread encoder calls of :data:`ENCODE_CHUNK` texts (the
        bits do not depend on the split), and giving up between two calls once ``stop`` is set.

        Raises:
            QueueStoppedError: ``stop`` was set (nothing of the step is stored).
        """
        workers = min(self.workers, len(texts))
        if workers <= 1:
            return self._encode_part(texts, stop)
        pool = self._threads()
        parts = [texts[i::workers] for i in range(workers)]
        answers = list(pool.map(lambda part: self._encode_part(part, stop), parts))
        out: list[bytes] = [b""] * len(texts)
        for i, answer in enumerate(answers):
            out[i::workers] = answer
        return out

    def _encode_part(self, texts: list[str], stop: threading.Event | None) -> list[bytes]:
        out: list[bytes] = []
        for start in range(0, len(texts), ENCODE_CHUNK):
            if stop is not None and stop.is_set():
                raise QueueStoppedError
            out += self.dense.codes(texts[start : start + ENCODE_CHUNK], workers=1)
        return out

    def _threads(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                nice = self.nice if self._niced_pool else 0
                self._pool = ThreadPoolExecutor(
                    self.workers,
                    thread_name_prefix="graphsvc-vector-queue",
                    initializer=lower_priority,
                    initargs=(nice,),
                )
            return self._pool

    # -- draining offline -------------------------------------------------------------------------

    def drain(
        self,
        namespace: str,
        model: VectorModel,
        *,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
        stop: threading.Event | None = None,
    ) -> int:
        """Encode every memory of the namespace that waits for a vector, a step at a time, on
        the calling thread and this queue's threads (``graphsvc embed``); the number stored.
        ``progress`` is called with each step's count of memories read. Memories written
        meanwhile are drained too. Stops early when ``stop`` is set (what is stored stays).

        Raises:
            GraphsvcError: the store failed, or the encoder failed on a whole step.
        """
        # The lease, when free, keeps a server that starts meanwhile from encoding the same
        # memories; a drain asked for explicitly goes on without it.
        held = not self.running and self.store.take_vector_queue(self.owner, self.lease_seconds)
        renewed = time.monotonic()
        done = 0
        try:
            while stop is None or not stop.is_set():
                if held and time.monotonic() - renewed >= self.lease_seconds / 3:
                    held = self.store.take_vector_queue(self.owner, self.lease_seconds)
                    renewed = time.monotonic()
                try:
                    first, taken, stored = self._step(namespace, model, limit, stop)
                except QueueStoppedError:  # asked to stop: what is stored stays
                    break
                if taken == 0:
                    break
                done += stored
                if progress is not None:
                    progress(taken)
                if stored == 0:  # forgotten or encoded elsewhere meanwhile, or stuck
                    self._check_advances(namespace, model, first)
        finally:
            if held and not self.running:
                self.store.release_vector_queue(self.owner)
        return done

    def _head(self, namespace: str) -> UUID | None:
        """The id of the first memory of the namespace's queue this process does not skip."""
        skipped = self._skipped.get(namespace, set())
        for item in self.store.pending_vectors(namespace, 1 + len(skipped)):
            if item.id.int not in skipped:
                return item.id
        return None

    def _check_advances(self, namespace: str, model: VectorModel, head: UUID | None) -> None:
        """After a step that stored nothing: raise unless the queue moved on (what it read was
        forgotten or given a vector by another drainer meanwhile).

        Raises:
            BadInputError: the namespace's model changed (a rebuild elsewhere).
            GraphsvcError: the same memory is at the head again: the queue does not advance.
        """
        if self.store.vector_model(namespace) != model:
            raise BadInputError(
                f"namespace {namespace!r} got another vector model while its vectors were "
                "encoded (a rebuild elsewhere?): run `graphsvc embed` again"
            )
        if head is not None and self._head(namespace) == head:
            raise GraphsvcError(
                f"the vector queue of namespace {namespace!r} does not advance: memory {head} "
                "is read, but its vector is not stored"
            )

    # -- the background thread --------------------------------------------------------------------

    def start(self, role: str | None = None) -> None:
        """Drain in the background from now on (see the module docstring), as ``role`` (what
        the process is, in :attr:`owner`); nothing when the encoder has no model (recall is
        lexical) or the thread runs already."""
        if role is not None:
            self.role = role
        if self.dense.model() is None:
            with self._lock:
                self._state = "off"
            return
        with self._lock:
            if self._thread is not None:
                return
            self._stop.clear()
            self._niced_pool = True
            self._state = "starting"
            self._thread = threading.Thread(
                target=self._run, name="graphsvc-vector-queue", daemon=True
            )
            self._thread.start()

    def notify(self) -> None:
        """Memories were written: look for them now (a no-op unless the thread runs)."""
        self._wake.set()

    @property
    def running(self) -> bool:
        """Whether the background thread runs in this process."""
        return self._thread is not None

    def close(self, timeout: float | None = None) -> None:
        """Stop the background thread: the step under way is given up after its current
        encoder call (its memories stay in the store's queue; a step already storing finishes),
        nothing new starts, the lease is given up. Waits at most ``timeout`` seconds (None: as
        long as that takes); a thread still busy then is left to the process's exit. Safe to
        call twice."""
        with self._lock:
            thread = self._thread
        self._stop.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning(
                    "the vector queue did not stop within %s s (an encoder call or a store "
                    "call under way); it is left to the process's exit, and its step's "
                    "memories wait in the store's queue",
                    timeout,
                )
                with self._lock:
                    self._thread = None  # a later close does not wait for it again
                    self._state = "stopped"
                return
        with self._lock:
            self._thread = None
            if self._state != "off":
                self._state = "stopped"
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def status(self) -> QueueStatus:
        """What the queue is doing (cheap: no store call)."""
        with self._lock:
            now = time.monotonic()
            recent = [(at, n) for at, n in self._steps if at >= now - RATE_WINDOW]
            rate = 0.0
            if recent:
                span = max(now - recent[0][0], 1e-3)
                rate = sum(n for _, n in recent) / span
            state = self._state
            if state == "stopped" and self.dense.model() is None:
                state = "off"
            return QueueStatus(
                state=state,
                pending=self._pending,
                owner=self._holder,
                stored=self._stored,
                rate=rate,
                skipped=sum(map(len, self._skipped.values())),
                error=self._error,
            )

    def _run(self) -> None:
        lower_priority(self.nice)
        backoff = 0.0
        try:
            while not self._stop.is_set():
                try:
                    worked = self._round()
                except QueueStoppedError:
                    break
                except GraphsvcError as exc:
                    backoff = min(MAX_BACKOFF, max(self.poll, 2 * backoff))
                    with self._lock:
                        self._state, self._error = "failing", str(exc)
                    log.warning("the vector queue failed (again in %.0f s): %s", backoff, exc)
                    self._pause(backoff)
                    continue
                except Exception as exc:  # a bug: say so loudly, keep the server up
                    backoff = min(MAX_BACKOFF, max(self.poll, 2 * backoff))
                    with self._lock:
                        self._state, self._error = "failing", f"unexpected error: {exc!r}"
                    log.exception("the vector queue failed unexpectedly (again in %.0f s)", backoff)
                    self._pause(backoff)
                    continue
                backoff = 0.0
                with self._lock:
                    self._error = None
                if not worked:
                    self._pause(self.poll)
        finally:
            try:
                self.store.release_vector_queue(self.owner)
            except GraphsvcError as exc:  # it lapses by itself
                log.info("the vector queue's lease was not given up (%s); it lapses", exc)

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds``, or less when woken (a write, a stop)."""
        self._wake.wait(seconds)
        self._wake.clear()

    def _round(self) -> bool:
        """One step for each namespace this encoder drains; whether any memory was read."""
        mine = self.dense.model()
        if mine is None:
            return False
        backlogs = [b for b in self.store.vector_backlogs() if _drains(b, mine)]
        held = self._lease()
        with self._lock:
            self._pending = sum(b.pending for b in backlogs)
            self._state = "standby" if not held else "draining" if backlogs else "idle"
        if not held:
            return False
        worked = False
        for backlog in backlogs:
            if self._stop.is_set() or not self._lease():
                break
            _, _, stored = self._step(backlog.namespace, mine, None, self._stop)
            worked = worked or stored > 0
            with self._lock:
                if self._pending is not None:
                    self._pending = max(0, self._pending - stored)
        return worked

    def _lease(self) -> bool:
        """Hold the store's lease (renewing it when due); whether this process holds it."""
        now = time.monotonic()
        if now - self._renewed < self.lease_seconds / 3:
            return True
        held = self.store.take_vector_queue(self.owner, self.lease_seconds)
        lease = self.store.vector_queue_lease() if not held else None
        with self._lock:
            self._holder = self.owner if held else (lease.owner if lease else None)
        if held:
            self._renewed = now
        return held


def _drains(backlog: VectorBacklog, mine: VectorModel) -> bool:
    """Whether the queue of this encoder drains a namespace's backlog: its vectors are this
    model's (a write with this encoder declared it). A namespace without a model was written
    without an encoder: `graphsvc embed` encodes it, when asked."""
    return backlog.model == mine


__all__ = [
    "LEASE_SECONDS",
    "QueueStatus",
    "QueueStoppedError",
    "VectorQueue",
    "lower_priority",
    "process_name",
]
