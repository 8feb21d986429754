"""The mirror: the embedded store. A networkx graph of memories and links, an inverted index with
exact term statistics kept up to date on every write and delete, and a log that can be trusted.

Persistence (the file format is :mod:`graphsvc.store.journal`):

- Every acknowledged write is one checksummed frame appended to ``log.jsonl`` and fsynced before
  the call returns, with ``seq`` one more than the write before.
- A write that fails (a full disk, an I/O error) is rolled back: the file is cut back to the last
  acknowledged record before anything else is written, and the call raises
  :class:`StoreUnavailableError` saying nothing was written. The store stays usable.
- Past ``snapshot_bytes`` of log, a compaction starts: under the store's lock (milliseconds) the
  log is switched to a new segment and the state is captured by reference (memories, links,
  beliefs and events are immutable); a background thread then writes ``snapshot.json`` from that
  capture while reads and writes go on, renames it into place and deletes the retired segment.
  A crash at any point leaves files that open to the same state (old snapshot + retired segment +
  new segment, replayed by ``seq``).
- On open, the snapshot is loaded and the segments replayed; a torn last record (a write that
  was never acknowledged) is cut with a WARNING saying what was cut; damage (a record whose
  checksum fails, anything after it, a gap in ``seq``) refuses to open with
  :class:`StoreCorruptError` naming ``file:line`` and how to recover (``graphsvc repair``, see
  :mod:`graphsvc.store.repair`). A missing or foreign log is refused the same way.
- Version-1 data directories (bare JSON lines, no checksums) still load; a writer migrates them
  at open: it takes a snapshot at once, which rewrites the state in the new format.

One process writes a data directory at a time (an exclusive ``flock`` on ``LOCK``); read-only opens
take no lock, change no file, and see the state as of their open.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import heapq
import logging
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from uuid import UUID

import networkx as nx
import orjson
from sortedcontainers import SortedList

from graphsvc.errors import (
    StoreCorruptError,
    StoreUnavailableError,
)
from graphsvc.model import (
    Belief,
    ContextEvent,
    ContextEventKind,
    ForgetReceipt,
    Link,
    LinkKind,
    LinkRef,
    Memory,
    NamespaceStats,
    WriteResult,
)
from graphsvc.store import journal
from graphsvc.store.base import (
    Candidate,
    Store,
    TermStats,
    Walk,
    belief_memory_missing,
    link_end_missing,
    memory_missing,
    micros,
    no_assembled_event,
    sort_links,
    split_upsert,
    supersedes_cycle,
)
from graphsvc.store.journal import (
    CLEAN_NAME,
    LEGACY_PREV,
    LOCK_NAME,
    LOG_NAME,
    NEW_LOG_NAME,
    OLD_LOG_NAME,
    SNAPSHOT_NAME,
    SNAPSHOT_TMP_NAME,
    Chain,
    LogError,
    LogHead,
    Problem,
    SnapshotHead,
)

logger = logging.getLogger("graphsvc.store")

FORMAT_VERSION = journal.FORMAT_VERSION
#: Rows per snapshot frame: small frames keep the compaction thread's turns at the GIL short.
SNAPSHOT_CHUNK = 1000
# BM25 parameters of native_top_k (Lucene's defaults).
BM25_K1 = 1.2
BM25_B = 0.75


def repair_hint(root: Path) -> str:
    """What to do about damaged or missing files (every corruption message ends with it)."""
    return (
        f"run `graphsvc repair --data-dir {root}` to keep every record that verifies and move "
        "the rest aside (it reports what it kept and what it cut)"
    )


def _snapshot_hint(path: Path) -> str:
    return (
        f"restore {path} from a backup: `graphsvc repair` keeps verified log records but cannot "
        "rebuild a snapshot"
    )


@dataclass
class _Namespace:
    """Everything of one namespace. Memories are keyed by ``id.int``: integers hash in C, UUIDs
    in Python, and the index is hashed on every posting. (Integer order is ``str(id)`` order.)"""

    graph: Any = field(default_factory=nx.MultiDiGraph)  # id.int nodes; edges keyed by link kind
    memories: dict[int, Memory] = field(default_factory=dict)
    # What scoring needs of each memory: (length, recordedAt µs, occurredAt µs or None, confidence).
    meta: dict[int, tuple[int, int, int | None, float]] = field(default_factory=dict)
    # Eviction order: (recordedAt in microseconds, id.int), oldest first.
    order: SortedList = field(default_factory=SortedList)
    postings: dict[str, dict[int, int]] = field(default_factory=dict)  # term -> {id.int: tf}
    total_length: int = 0
    beliefs: dict[UUID, Belief] = field(default_factory=dict)
    beliefs_of: dict[int, set[UUID]] = field(default_factory=dict)  # memory -> beliefs using it
    events: dict[str, list[ContextEvent]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Capture:
    """The state at one ``seq``, by reference (every object in it is immutable): what a
    compaction writes while the store goes on."""

    head: SnapshotHead
    # (namespace, memories, links, beliefs, events by run)
    spaces: list[tuple[str, list[Memory], list[Link], list[Belief], dict[str, list[ContextEvent]]]]


@dataclass
class Replayed:
    """What a replay applied, and where it stopped.

    Attributes:
        applied: records applied.
        first_seq: ``seq`` of the first record applied, or None.
        last_seq: ``seq`` of the last record applied, or None.
        problem: the first problem (``torn`` or ``damaged``), or None.
        problem_segment: index in :attr:`Chain.segments` of the segment with the problem.
        kept: per segment index, the byte offset just after its last good record.
        frames: per segment index, the frames (header included) that were applied or that
            the snapshot already held.
        after: frames after the problem that verify (header frames of later segments
            included): what a cut there loses.
    """

    applied: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    problem: Problem | None = None
    problem_segment: int | None = None
    kept: dict[int, int] = field(default_factory=dict)
    frames: dict[int, list[journal.Frame]] = field(default_factory=dict)
    after: list[journal.Frame] = field(default_factory=list)

    @property
    def verified_after(self) -> int:
        """How many frames after the problem verify."""
        return len(self.after)


# -- compact JSON forms (faster than pydantic's for the log's hot path) ------------------------


def _dt(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _memory_row(m: Memory) -> list[Any]:
    return [
        str(m.id), m.text, m.kind, _dt(m.occurred_at), _dt(m.recorded_at), _dt(m.invalidated_at),
        list(m.tags), m.source, m.confidence, m.tokens, list(m.terms),
    ]  # fmt: skip


def _memory_from_row(ns: str, row: list[Any]) -> Memory:
    mid, text, kind, occ, rec, inv, tags, source, conf, tokens, terms = row
    return Memory.model_construct(
        id=UUID(mid), namespace=ns, text=text, kind=kind, occurred_at=_parse_dt(occ),
        recorded_at=_parse_dt(rec), invalidated_at=_parse_dt(inv), tags=tuple(tags),
        source=source, confidence=conf, tokens=tokens, terms=tuple(terms),
    )  # fmt: skip


def _link_row(lk: Link) -> list[Any]:
    return [str(lk.source), str(lk.target), lk.kind.value, lk.weight, _dt(lk.created_at), lk.note]


def _link_from_row(row: list[Any]) -> Link:
    src, dst, kind, weight, created, note = row
    return Link.model_construct(
        source=UUID(src), target=UUID(dst), kind=LinkKind(kind), weight=weight,
        created_at=_parse_dt(created), note=note,
    )  # fmt: skip


def _belief_row(b: Belief) -> dict[str, Any]:
    return b.model_dump(mode="json")


def _event_row(e: ContextEvent) -> dict[str, Any]:
    return e.model_dump(mode="json")


def lock_data_dir(root: Path) -> IO[str]:
    """Take the writer's exclusive ``flock`` on ``root/LOCK`` (the file records the pid); closing
    the returned file releases it.

    Raises:
        StoreUnavailableError: another process holds it (the message names its pid).
        OSError: the lock file cannot be opened or locked.
    """
    lock_file = open(root / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 - held open
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        lock_file.seek(0)
        holder = lock_file.read().strip() or "unknown"
        lock_file.close()
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise StoreUnavailableError(
                f"data dir {root} is in use by another graphsvc process (pid {holder}); "
                "stop it, or use another --data-dir"
            ) from exc
        raise
    try:
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(str(os.getpid()))
        lock_file.flush()
    except OSError:
        lock_file.close()
        raise
    return lock_file


def lock_used(root: Path) -> bool:
    """Whether a writer has held this directory: ``LOCK`` holds a pid (written before any log
    is created; an empty one is a first open that failed before it)."""
    try:
        return (root / LOCK_NAME).stat().st_size > 0
    except FileNotFoundError:
        return False


def _chunks(items: Sequence[Any], size: int = SNAPSHOT_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class MirrorStore(Store):
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
    ) -> None:
        self._dir = data_dir
        self._fsync = fsync
        self._snapshot_bytes = snapshot_bytes
        self._read_only = read_only
        self._lock = threading.RLock()
        self._spaces: dict[str, _Namespace] = {}
        self._owner: dict[int, str] = {}  # memory ids are unique across namespaces
        self._seq = 0
        self._gen = 0
        self._log_fd: int | None = None
        self._log_end = 0  # bytes of the active log that hold acknowledged records
        self._log_head: LogHead | None = None
        # Why writes are refused after a failure that could not be rolled back, or None; with
        # the offset to cut back to when a retry may clear it.
        self._broken: str | None = None
        self._broken_offset: int | None = None
        self._compactor: threading.Thread | None = None
        self._compact_after = 0  # after a failed compaction: log size before the next attempt
        self._lock_file: IO[str] | None = None
        self._created_lock = False  # this open created LOCK (a brand-new directory)
        self._open = False

    # -- lifecycle -------------------------------------------------------------------------------

    def open(self) -> None:
        """Load the data directory (see the module docstring).

        Raises:
            StoreUnavailableError: another process writes the directory, or a file cannot be
                read or written.
            StoreCorruptError: damage, or a missing or foreign log; the message names the file
                and line and says how to recover.
        """
        with self._lock:
            if self._open:
                return
            if self._dir is not None:
                self._load_dir(self._dir)
            self._open = True

    def close(self) -> None:
        """Finish a running compaction, leave the clean-close marker, release the lock."""
        with self._lock:
            self.wait_for_compaction()
            if self._log_fd is not None:
                clean = self._open and self._broken is None and self._log_head is not None
                try:
                    if clean:
                        os.fsync(self._log_fd)
                except OSError as exc:
                    clean = False
                    logger.error("cannot sync %s at close (%s)", self._log_path(), exc.strerror)
                finally:
                    os.close(self._log_fd)
                    self._log_fd = None
                if clean and self._dir is not None and self._log_head is not None:
                    marker = journal.Marker(log=str(self._log_head.log), seq=self._seq)
                    try:
                        journal.write_marker(self._dir, marker)
                    except OSError as exc:
                        logger.warning(
                            "could not write %s in %s (%s): the next open cannot tell a torn "
                            "write from damage at the end of the log",
                            CLEAN_NAME, self._dir, exc.strerror,
                        )  # fmt: skip
            if self._lock_file is not None:
                self._lock_file.close()  # releases the flock
                self._lock_file = None
            self._open = False

    def ping(self) -> None:
        if not self._open:
            raise StoreUnavailableError("the embedded store is not open: call open() first")

    def wait_for_compaction(self, timeout: float | None = None) -> bool:
        """Wait for a running background compaction; True when none is running any more."""
        thread = self._compactor
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                return False
            self._compactor = None
        return True

    @property
    def compacting(self) -> bool:
        """Whether a background compaction is running."""
        thread = self._compactor
        return thread is not None and thread.is_alive()

    def _load_dir(self, root: Path) -> None:
        # Loading creates millions of objects that all live on: the cyclic garbage collector
        # would traverse them again and again for nothing (a third of the time). It is paused
        # for the load (process-wide, for those seconds) and left as it was.
        paused = gc.isenabled()
        gc.disable()
        try:
            self._load_files(root)
        finally:
            if paused:
                gc.enable()

    def _load_files(self, root: Path) -> None:
        try:
            lock_existed = lock_used(root)
            if self._read_only:
                if not root.exists():
                    return  # a brand-new store, seen read-only: empty, and nothing is created
            else:
                root.mkdir(parents=True, exist_ok=True)
                self._take_lock(root)
                self._created_lock = not lock_existed
            chain = self._inspect(root, lock_existed)
            if chain.refusal is not None:
                raise StoreCorruptError(f"cannot open {root}: {chain.refusal}; {repair_hint(root)}")
            if chain.snapshot is not None:
                self._load_snapshot(chain.snapshot)
            replayed = self.replay(chain)
            self._check_replay(chain, replayed)
            if not self._read_only:
                self._prepare_writes(chain, replayed)
            elif replayed.problem is not None and chain.active is not None:
                logger.info(
                    "%s ends with an incomplete record (%s, line %d): a write in progress or one "
                    "that was never acknowledged; a read-only open leaves it",
                    chain.active.path, replayed.problem.reason, replayed.problem.line,
                )  # fmt: skip
        except LogError as exc:
            self._abandon()
            hint = _snapshot_hint(exc.path) if exc.path.name == SNAPSHOT_NAME else repair_hint(root)
            raise StoreCorruptError(f"{exc}; {hint}") from exc
        except OSError as exc:
            self._abandon()
            raise StoreUnavailableError(
                f"cannot open data dir {root}: {exc.strerror or exc}"
            ) from exc
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """After a failed open: release the lock (the directory can be repaired and reopened)
        and forget what was loaded, so that another open() starts afresh. A lock file this open
        created goes too when no log was made: it would otherwise say the store had one."""
        root = self._dir
        held = self._created_lock and self._lock_file is not None
        if held and root is not None and not (root / LOG_NAME).exists():
            with contextlib.suppress(OSError):
                (root / LOCK_NAME).unlink()
        self._created_lock = False
        self.close()
        self._spaces = {}
        self._owner = {}
        self._seq = self._gen = self._log_end = 0
        self._log_head = None
        self._broken = self._broken_offset = None

    def _inspect(self, root: Path, lock_existed: bool) -> Chain:
        """What to load. A read-only open races the writer's compaction (a segment renamed, a
        snapshot replaced between two reads), so it reads again before it believes a problem."""
        attempts = 1 if not self._read_only else 4
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                chain = journal.inspect(root, lock_existed=lock_existed)
            except (FileNotFoundError, LogError):
                if last:
                    raise
            else:
                if chain.refusal is None or last:
                    return chain
            time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def _take_lock(self, root: Path) -> None:
        self._lock_file = lock_data_dir(root)

    # -- loading ---------------------------------------------------------------------------------

    def _load_snapshot(self, snapshot: journal.Snapshot) -> None:
        """Load a verified snapshot into an empty store.

        Raises:
            LogError: a frame that verifies but holds no valid rows.
        """
        self._seq = snapshot.head.seq
        self._gen = snapshot.head.gen
        if snapshot.legacy is not None:
            try:
                self._load_legacy_snapshot(snapshot.legacy)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise LogError(snapshot.path, 1, 0, f"not a valid snapshot ({exc!r})") from exc
            return
        for frame in snapshot.frames:
            try:
                value = frame.record()
                op, ns = value["op"], value["ns"]
                space = self._space(ns)
                rows = value["rows"]
                if op == "memories":
                    self._add_memories(space, [_memory_from_row(ns, row) for row in rows])
                elif op == "links":
                    for row in rows:
                        self._add_link(space, _link_from_row(row))
                elif op == "beliefs":
                    for row in rows:
                        self._add_belief(space, Belief.model_validate(row))
                elif op == "events":
                    run = space.events.setdefault(value["run"], [])
                    run.extend(ContextEvent.model_validate(row) for row in rows)
                else:
                    raise ValueError(f"unknown snapshot record {op!r}")
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise LogError(
                    snapshot.path,
                    frame.line,
                    frame.offset,
                    f"not a valid snapshot record ({exc!r})",
                ) from exc

    def _load_legacy_snapshot(self, data: dict[str, Any]) -> None:
        for ns, body in data["namespaces"].items():
            space = self._space(ns)
            self._add_memories(space, [_memory_from_row(ns, row) for row in body["memories"]])
            for row in body["links"]:
                self._add_link(space, _link_from_row(row))
            for row in body["beliefs"]:
                self._add_belief(space, Belief.model_validate(row))
            for run_id, rows in body["events"].items():
                space.events[run_id] = [ContextEvent.model_validate(r) for r in rows]

    def replay(self, chain: Chain) -> Replayed:
        """Apply the chain's log records after the snapshot, in ``seq`` order, up to the first
        problem: a frame that does not verify, a record that is no valid write, or a ``seq``
        that does not follow the one before. Nothing is raised for problems: they are reported
        in the result (:meth:`open` refuses them, ``repair`` cuts there)."""
        out = Replayed()
        last = len(chain.segments) - 1
        for index, segment in enumerate(chain.segments):
            scan = segment.scan
            frames = scan.frames
            skip = 1 if scan.version == FORMAT_VERSION else 0  # the header
            out.frames[index] = list(frames[:skip])
            out.kept[index] = min(frames[0].end + 1, scan.size) if skip else 0
            for position in range(skip, len(frames)):
                frame = frames[position]
                reason = self._replay_frame(frame, out)
                if reason is not None:
                    out.problem = Problem("damaged", frame.line, frame.offset, reason)
                    out.problem_segment = index
                    out.after = [*frames[position + 1 :], *scan.after]
                    for later in chain.segments[index + 1 :]:
                        out.after += [*later.scan.frames, *later.scan.after]
                    return out
                out.frames[index].append(frame)
                out.kept[index] = min(frame.end + 1, scan.size)
            if scan.problem is not None:
                problem = scan.problem
                if problem.kind == "torn" and index != last:
                    problem = Problem(
                        "damaged", problem.line, problem.offset,
                        f"{problem.reason}, in a segment that is not the last one",
                    )  # fmt: skip
                out.problem = problem
                out.problem_segment = index
                out.after = list(scan.after)
                for later in chain.segments[index + 1 :]:
                    out.after += [*later.scan.frames, *later.scan.after]
                return out
        return out

    def _replay_frame(self, frame: journal.Frame, out: Replayed) -> str | None:
        """Apply one record; the reason it cannot be applied, or None."""
        try:
            record = frame.record()
            seq = record["seq"]
            if not isinstance(seq, int):
                return f"not a valid log record (seq {seq!r})"
            if seq <= self._seq:
                if out.applied:
                    return f"seq {seq} does not follow seq {self._seq}"
                return None  # already in the snapshot (a compaction was cut short)
            if seq != self._seq + 1:
                return (
                    f"seq {seq} follows seq {self._seq}: records {self._seq + 1}..{seq - 1} are "
                    "missing"
                )
            self._apply(record)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            return f"not a valid log record ({type(exc).__name__}: {exc})"
        except StoreCorruptError as exc:
            return str(exc)
        self._seq = seq
        out.applied += 1
        if out.first_seq is None:
            out.first_seq = seq
        out.last_seq = seq
        return None

    def _check_replay(self, chain: Chain, replayed: Replayed) -> None:
        """Refuse what a replay found, except a torn tail after a crash (cut with a warning by
        :meth:`_prepare_writes`).

        Raises:
            LogError: damage, or a log that does not match its clean-close marker.
        """
        if chain.segments:
            self._log_head = chain.segments[-1].head
            self._gen = max(self._gen, self._log_head.gen)
        problem = replayed.problem
        marker = chain.marker
        if problem is not None and replayed.problem_segment is not None:
            path = chain.segments[replayed.problem_segment].path
            after = replayed.verified_after
            if problem.kind == "damaged":
                lost = (
                    f"; {after} later record(s) verify but cannot be applied past it"
                    if after
                    else ""
                )
                raise LogError(
                    path, problem.line, problem.offset, f"damaged: {problem.reason}{lost}"
                )
            if marker is not None:
                raise LogError(
                    path, problem.line, problem.offset,
                    f"damaged: {problem.reason} at the end of a log that was closed cleanly at "
                    f"seq {marker.seq}: it is not a torn write, the file was changed after close",
                )  # fmt: skip
        active = chain.active
        if marker is not None and active is not None:
            if active.head.log != marker.log:
                raise LogError(
                    active.path, 1, 0,
                    f"the store was closed cleanly with log {marker.log}, but this is "
                    f"{active.describe()}: the log was replaced",
                )  # fmt: skip
            if self._seq != marker.seq:
                scan = active.scan
                raise LogError(
                    active.path, len(scan.frames) + 1, scan.end,
                    f"the log ends at seq {self._seq} but the store was closed cleanly at seq "
                    f"{marker.seq}: acknowledged records are missing (the file was cut)",
                )  # fmt: skip

    def _prepare_writes(self, chain: Chain, replayed: Replayed) -> None:
        """Make the directory ready for appends: drop the clean-close marker, finish an
        interrupted segment switch, cut a torn tail (with a warning), complete a missing final
        newline, open the active log, and finish an interrupted compaction or migrate a
        version-1 log.

        Raises:
            OSError: a file cannot be changed.
        """
        root = chain.root
        if chain.marker is not None:
            (root / CLEAN_NAME).unlink()
            journal.fsync_dir(root)
        if chain.roll_forward is not None:
            os.replace(chain.roll_forward, root / LOG_NAME)
            journal.fsync_dir(root)
            logger.warning(
                "finished an interrupted log switch in %s: %s is now %s",
                root, NEW_LOG_NAME, LOG_NAME,
            )  # fmt: skip
            chain.segments[-1].path = root / LOG_NAME
        if chain.leftover_new is not None:
            chain.leftover_new.unlink()
        for stale in chain.stale:
            stale.unlink()
            logger.info("deleted %s: the snapshot holds every record in it", stale)
        try:
            (root / SNAPSHOT_TMP_NAME).unlink(missing_ok=True)  # a compaction cut short
        except OSError as exc:
            logger.warning("cannot delete %s (%s)", root / SNAPSHOT_TMP_NAME, exc.strerror)
        log_path = root / LOG_NAME
        if not chain.segments:  # a brand-new store
            head = LogHead(journal.new_log_id(), gen=0, base=0, prev=None)
            self._install_segment(head)
            return
        active = chain.segments[-1]
        scan = active.scan
        problem = replayed.problem
        end = scan.size
        if problem is not None:  # a torn tail after a crash: _check_replay refused the rest
            end = replayed.kept[len(chain.segments) - 1]
            os.truncate(log_path, end)
            logger.warning(
                "cut a torn last record from %s: %d bytes from byte %d (line %d), a write that "
                "was never acknowledged (%s); the %d records replayed before it are intact",
                log_path, scan.size - end, end, problem.line, problem.reason, replayed.applied,
            )  # fmt: skip
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
        self._log_fd = fd
        if problem is None and scan.missing_newline:
            journal.write_all(fd, b"\n")
            end += 1
            logger.warning(
                "%s: the last record verifies but its final newline was missing; added it",
                log_path,
            )
        if self._fsync or problem is not None or scan.missing_newline:
            os.fsync(fd)
        self._log_end = end
        if active.head.log is None:
            logger.warning(
                "%s is a version-1 log (no checksums): migrating it by taking a snapshot now",
                log_path,
            )
            self._compact(rotate=True, background=False, raise_errors=False)
        elif len(chain.segments) > 1:
            logger.warning("%s: finishing a compaction that was cut short", root)
            self._compact(rotate=False, background=False, raise_errors=False)

    # -- the log ---------------------------------------------------------------------------------

    def _write(self, record: dict[str, Any], apply: Callable[[], None] | None = None) -> None:
        """Append a record and make it durable; then apply it (with ``apply``, which changes the
        state from the objects at hand, or by replaying the record).

        Raises:
            StoreUnavailableError: the store is read-only or closed, or the log cannot be
                written; nothing was written or applied.
        """
        if self._read_only:
            raise StoreUnavailableError("this store was opened read-only; writes are refused")
        if not self._open:
            raise StoreUnavailableError("the embedded store is not open: call open() first")
        if self._broken is not None:
            self._retry_rollback()
        record["seq"] = self._seq + 1
        if self._log_fd is not None:
            self._append(journal.encode(record))
        if apply is None:
            self._apply(record)
        else:
            apply()
        self._seq = record["seq"]
        if self._log_fd is not None and self._log_end > max(
            self._snapshot_bytes, self._compact_after
        ):
            self._start_compaction()

    def _append(self, frame: bytes) -> None:
        """Append a frame at the end of the acknowledged log, durably; on failure, cut the file
        back so that nothing of it stays.

        Raises:
            StoreUnavailableError: the frame could not be written (nothing of it stays, or, if
                even the cut failed, writes are refused until it succeeds).
        """
        fd = self._log_fd
        assert fd is not None
        start = self._log_end
        try:
            journal.write_all(fd, frame)
            if self._fsync:
                os.fdatasync(fd)
        except OSError as exc:
            self._roll_back(start, exc)
        self._log_end = start + len(frame)

    def _log_path(self) -> Path:
        assert self._dir is not None
        return self._dir / LOG_NAME

    def _roll_back(self, offset: int, exc: OSError) -> None:
        fd = self._log_fd
        assert fd is not None
        path = self._log_path()
        try:
            os.ftruncate(fd, offset)
            os.fsync(fd)
        except OSError as again:
            self._broken = (
                f"a write to {path} failed ({exc.strerror}) and the partial record could not be "
                f"cut back ({again.strerror})"
            )
            self._broken_offset = offset
            raise StoreUnavailableError(
                f"cannot write the log {path} ({exc.strerror}): nothing was written, but the "
                f"partial record could not be removed yet ({again.strerror}); writes are refused "
                "until it can be (each write retries; reopening the store also cuts it)"
            ) from exc
        raise StoreUnavailableError(
            f"cannot write the log {path} ({exc.strerror}): nothing was written (the partial "
            "record was rolled back); free space or fix the disk, then retry"
        ) from exc

    def _retry_rollback(self) -> None:
        """Clear a failed rollback by cutting the log back again.

        Raises:
            StoreUnavailableError: the log still cannot be cut back, or the failure is one only
                a reopen can clear.
        """
        offset, fd = self._broken_offset, self._log_fd
        if offset is not None and fd is not None:
            try:
                os.ftruncate(fd, offset)
                os.fsync(fd)
            except OSError:
                pass
            else:
                self._broken = self._broken_offset = None
                return
        raise StoreUnavailableError(f"writes are refused: {self._broken}; reopen the store")

    # -- compaction ------------------------------------------------------------------------------

    def snapshot(self) -> None:
        """Compact now and wait: switch to a new log segment, write the whole state to
        ``snapshot.json`` and delete the retired segment.

        Raises:
            StoreUnavailableError: the snapshot cannot be written (the log still holds every
                record: nothing is lost).
        """
        with self._lock:
            if self._dir is None or self._log_fd is None:
                return
            self.wait_for_compaction()
            try:
                self._compact(rotate=True, background=False, raise_errors=True)
            except OSError as exc:
                raise StoreUnavailableError(
                    f"cannot write a snapshot in {self._dir} ({exc.strerror}); the log still "
                    "holds every write"
                ) from exc

    def _start_compaction(self) -> None:
        """Start a background compaction unless one runs (called by a write, lock held)."""
        if self.compacting or self._broken is not None:
            return
        try:
            self._compact(rotate=True, background=True, raise_errors=False)
        except OSError as exc:
            self._compact_after = self._log_end + max(self._snapshot_bytes // 4, 1)
            logger.error(
                "could not start a compaction in %s (%s); the log keeps every write, next "
                "attempt past %d bytes",
                self._dir, exc.strerror, self._compact_after,
            )  # fmt: skip

    def _compact(self, *, rotate: bool, background: bool, raise_errors: bool) -> None:
        """Switch to a new segment (``rotate``, unless a retired one is still there), capture the
        state, and write the snapshot (in a thread when ``background``). Lock held.

        Raises:
            OSError: the switch failed; or the snapshot failed, with ``raise_errors`` (else
                that is logged: the log keeps every write).
        """
        assert self._dir is not None
        if rotate and not (self._dir / OLD_LOG_NAME).exists():
            self._rotate()
        capture = self._capture()
        if background:
            thread = threading.Thread(
                target=self._write_snapshot, args=(capture, False),
                name="graphsvc-compaction", daemon=True,
            )  # fmt: skip
            self._compactor = thread
            thread.start()
        else:
            self._write_snapshot(capture, raise_errors)

    def _install_segment(self, head: LogHead) -> int:
        """Write ``log.new.jsonl`` with its header (fsynced) and rename it to ``log.jsonl``;
        the active log becomes it. Returns the new descriptor.

        Raises:
            OSError: it cannot be written (nothing changed then).
        """
        assert self._dir is not None
        new_path = self._dir / NEW_LOG_NAME
        frame = journal.encode(head.record())
        fd = os.open(new_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        try:
            journal.write_all(fd, frame)
            os.fsync(fd)
        except OSError:
            os.close(fd)
            new_path.unlink(missing_ok=True)
            raise
        os.replace(new_path, self._dir / LOG_NAME)
        journal.fsync_dir(self._dir)
        if self._log_fd is not None:
            os.close(self._log_fd)
        self._log_fd = fd
        self._log_end = len(frame)
        self._log_head = head
        self._gen = head.gen
        return fd

    def _rotate(self) -> None:
        """Retire the active log as ``log.old.jsonl`` and continue in a new segment. Lock held.

        Raises:
            OSError: the switch failed; the active log is unchanged (or, if even undoing the
                switch failed, writes are refused until a reopen finishes it).
        """
        assert self._dir is not None and self._log_head is not None
        root = self._dir
        prev = self._log_head.log or LEGACY_PREV
        head = LogHead(journal.new_log_id(), gen=self._gen + 1, base=self._seq, prev=prev)
        new_path, log_path, old_path = root / NEW_LOG_NAME, root / LOG_NAME, root / OLD_LOG_NAME
        frame = journal.encode(head.record())
        fd = os.open(new_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        try:
            journal.write_all(fd, frame)
            os.fsync(fd)
            os.rename(log_path, old_path)
        except OSError:
            os.close(fd)
            new_path.unlink(missing_ok=True)
            raise
        try:
            os.rename(new_path, log_path)
            journal.fsync_dir(root)
        except OSError as exc:
            os.close(fd)
            try:
                os.rename(old_path, log_path)
                new_path.unlink(missing_ok=True)
            except OSError:
                self._broken = f"a log switch in {root} failed half-way ({exc.strerror})"
                self._broken_offset = None
            raise
        if self._log_fd is not None:
            os.close(self._log_fd)
        self._log_fd = fd
        self._log_end = len(frame)
        self._log_head = head
        self._gen = head.gen

    def _capture(self) -> _Capture:
        """The state now, by reference: shallow copies of the containers (lock held)."""
        assert self._log_head is not None
        head = SnapshotHead(FORMAT_VERSION, gen=self._gen, seq=self._seq, log=self._log_head.log)
        spaces = [
            (
                ns,
                list(space.memories.values()),
                self._all_links(space),
                list(space.beliefs.values()),
                {run: list(events) for run, events in space.events.items()},
            )
            for ns, space in self._spaces.items()
        ]
        return _Capture(head, spaces)

    @staticmethod
    def _snapshot_frames(capture: _Capture) -> Iterator[bytes]:
        """The snapshot's frames. Each row is serialised on its own and its objects freed at
        once, so that writing a snapshot leaves no garbage for a full collection of the cyclic
        garbage collector (which would stop every thread, readers included, for a while)."""
        dumps = orjson.dumps
        yield journal.encode(capture.head.record())
        count = 1
        for ns, memories, links, beliefs, events in capture.spaces:
            parts: list[tuple[bytes, Sequence[Any], Callable[[Any], Any]]] = [
                (b'"op":"memories","ns":%b' % dumps(ns), memories, _memory_row),
                (b'"op":"links","ns":%b' % dumps(ns), links, _link_row),
                (b'"op":"beliefs","ns":%b' % dumps(ns), beliefs, _belief_row),
            ]
            parts += [
                (b'"op":"events","ns":%b,"run":%b' % (dumps(ns), dumps(run)), rows, _event_row)
                for run, rows in events.items()
            ]
            for head, items, row in parts:
                for chunk in _chunks(items):
                    rows = b",".join([dumps(row(item)) for item in chunk])
                    yield journal.encode_payload(b'{%b,"rows":[%b]}' % (head, rows))
                    count += 1
        yield journal.encode({"op": "end", "frames": count + 1})

    def _write_snapshot(self, capture: _Capture, raise_errors: bool) -> None:
        """Write the captured state to ``snapshot.json`` (temporary file, fsync, rename), then
        delete the retired segment. Runs without the store's lock.

        Raises:
            Exception: with ``raise_errors``, why the snapshot could not be written (the log and
                the previous snapshot are untouched; without it, the failure is logged).
        """
        assert self._dir is not None
        root = self._dir
        tmp = root / SNAPSHOT_TMP_NAME
        try:
            journal.write_file(tmp, self._snapshot_frames(capture))
            os.replace(tmp, root / SNAPSHOT_NAME)
            journal.fsync_dir(root)
            old = root / OLD_LOG_NAME
            if old.exists():
                old.unlink()
                journal.fsync_dir(root)
        except Exception as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            self._compact_after = self._log_end + max(self._snapshot_bytes // 4, 1)
            if raise_errors:
                raise
            logger.error(
                "compaction in %s failed (%s); the log keeps every write, next attempt past %d "
                "bytes",
                root, getattr(exc, "strerror", None) or repr(exc), self._compact_after,
            )  # fmt: skip
        else:
            self._compact_after = 0

    def _apply(self, record: dict[str, Any]) -> None:
        ns = record["ns"]
        space = self._space(ns)
        op = record["op"]
        if op == "upsert":
            for mid in record["evict"]:
                self._remove_memory(space, UUID(mid).int)
            self._add_memories(space, [_memory_from_row(ns, row) for row in record["memories"]])
        elif op == "link":
            for row in record["links"]:
                self._add_link(space, _link_from_row(row))
        elif op == "forget":
            self._remove_memory(space, UUID(record["id"]).int)
        elif op == "belief":
            self._add_belief(space, Belief.model_validate(record["belief"]))
        elif op == "event":
            event = ContextEvent.model_validate(record["event"])
            space.events.setdefault(event.run_id, []).append(event)
        elif op == "report":
            events = space.events[record["run"]]
            seq = record["eventSeq"]
            events[seq] = events[seq].model_copy(update={"reported_tokens": record["tokens"]})
        else:
            raise StoreCorruptError(f"unknown log operation {op!r}")

    # -- state changes (no I/O) ------------------------------------------------------------------

    def _space(self, namespace: str) -> _Namespace:
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = _Namespace()
        return space

    def _add_memories(self, space: _Namespace, memories: Sequence[Memory]) -> None:
        """Index memories that are not in the store (a batch: sorted structures grow once)."""
        owner = self._owner
        stored = space.memories
        meta = space.meta
        postings = space.postings
        order = []
        total = 0
        for memory in memories:
            key = memory.id.int
            owner[key] = memory.namespace
            stored[key] = memory
            terms = memory.terms
            recorded = micros(memory.recorded_at)
            occurred = None if memory.occurred_at is None else micros(memory.occurred_at)
            meta[key] = (len(terms), recorded, occurred, memory.confidence)
            order.append((recorded, key))
            total += len(terms)
            for term, count in Counter(terms).items():
                posting = postings.get(term)
                if posting is None:
                    postings[term] = {key: count}
                else:
                    posting[key] = count
        space.order.update(order)
        space.graph.add_nodes_from(key for _, key in order)
        space.total_length += total

    def _remove_memory(self, space: _Namespace, key: int) -> None:
        memory = space.memories.pop(key, None)
        if memory is None:
            return
        del self._owner[key]
        recorded = space.meta.pop(key)[1]
        space.order.remove((recorded, key))
        space.graph.remove_node(key)
        for term in set(memory.terms):
            posting = space.postings[term]
            del posting[key]
            if not posting:
                del space.postings[term]
        space.total_length -= len(memory.terms)
        for belief_id in space.beliefs_of.pop(key, set()):
            MirrorStore._remove_belief(space, belief_id)

    @staticmethod
    def _add_link(space: _Namespace, link: Link) -> None:
        space.graph.add_edge(link.source.int, link.target.int, key=link.kind.value, link=link)

    @staticmethod
    def _add_belief(space: _Namespace, belief: Belief) -> None:
        space.beliefs[belief.id] = belief
        for mid in (*belief.source_ids, *belief.linked_context_ids):
            space.beliefs_of.setdefault(mid.int, set()).add(belief.id)

    @staticmethod
    def _remove_belief(space: _Namespace, belief_id: UUID) -> None:
        belief = space.beliefs.pop(belief_id, None)
        if belief is None:
            return
        for mid in (*belief.source_ids, *belief.linked_context_ids):
            users = space.beliefs_of.get(mid.int)
            if users is not None:
                users.discard(belief_id)
                if not users:
                    del space.beliefs_of[mid.int]

    @staticmethod
    def _all_links(space: _Namespace) -> list[Link]:
        return [data["link"] for _, _, data in space.graph.edges(data=True)]

    @staticmethod
    def _links_touching(space: _Namespace, key: int) -> list[Link]:
        graph = space.graph
        found = [d["link"] for _, _, d in graph.out_edges(key, data=True)]
        found += [d["link"] for _, _, d in graph.in_edges(key, data=True)]
        return found

    # -- writes ----------------------------------------------------------------------------------

    def upsert_memories(
        self, namespace: str, memories: Sequence[Memory], *, max_memories: int
    ) -> WriteResult:
        with self._lock:
            space = self._space(namespace)
            created, unchanged = split_upsert(
                memories,
                stored=lambda mid: space.memories.get(mid.int),
                taken_elsewhere=lambda mid: mid.int in self._owner,
            )
            overflow = len(space.memories) + len(created) - max_memories
            evict: list[UUID] = []
            if overflow > 0:
                keep = {mid.int for mid in unchanged}
                for _, old in space.order:
                    if len(evict) == overflow:
                        break
                    if old not in keep:
                        evict.append(space.memories[old].id)

            def apply() -> None:
                for mid in evict:
                    self._remove_memory(space, mid.int)
                self._add_memories(space, created)

            if created or evict:
                record = {
                    "op": "upsert", "ns": namespace,
                    "memories": [_memory_row(m) for m in created],
                    "evict": [str(mid) for mid in evict],
                }  # fmt: skip
                self._write(record, apply)
            return WriteResult(
                created=tuple(m.id for m in created), unchanged=tuple(unchanged),
                evicted=tuple(evict),
            )  # fmt: skip

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
                old = space.graph.get_edge_data(link.source.int, link.target.int, link.kind.value)
                if old is not None:  # keep the original creation time
                    link = link.model_copy(update={"created_at": old["link"].created_at})
                rows.append(_link_row(link))
            if rows:
                self._write({"op": "link", "ns": namespace, "links": rows})

    @staticmethod
    def _check_supersedes_acyclic(space: _Namespace, links: Sequence[Link]) -> None:
        pending: dict[int, set[int]] = {}
        for link in links:
            if link.kind is LinkKind.SUPERSEDES:
                pending.setdefault(link.source.int, set()).add(link.target.int)
        if not pending:
            return
        graph = space.graph

        def successors(node: int) -> set[int]:
            nxt = {v for _, v, k in graph.out_edges(node, keys=True) if k == "SUPERSEDES"}
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

    def save_belief(self, belief: Belief) -> None:
        with self._lock:
            space = self._space(belief.namespace)
            missing = [
                m for m in (*belief.source_ids, *belief.linked_context_ids)
                if m.int not in space.memories
            ]  # fmt: skip
            if missing:
                raise belief_memory_missing(missing[0])
            self._write({"op": "belief", "ns": belief.namespace, "belief": _belief_row(belief)})

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
            self._write({"op": "event", "ns": namespace, "event": _event_row(event)})
            return event

    def set_reported_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        with self._lock:
            events = self._space(namespace).events.get(run_id, [])
            target = self._assembled(events, step)
            if target is None:
                raise no_assembled_event(run_id, step)
            self._write({
                "op": "report", "ns": namespace, "run": run_id,
                "eventSeq": target.seq, "tokens": reported_tokens,
            })  # fmt: skip
            return events[target.seq]

    @staticmethod
    def _assembled(events: Sequence[ContextEvent], step: int) -> ContextEvent | None:
        found = [e for e in events if e.step == step and e.kind is ContextEventKind.ASSEMBLED]
        return found[-1] if found else None

    # -- reads -----------------------------------------------------------------------------------

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        with self._lock:
            memories = self._space(namespace).memories
            found = (memories.get(i.int) for i in ids)
            return [m for m in found if m is not None]

    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        with self._lock:
            space = self._space(namespace)
            df = {t: len(space.postings.get(t, ())) for t in terms}
            return TermStats(len(space.memories), space.total_length, df)

    @staticmethod
    def _candidates(
        space: _Namespace, keys: Sequence[int], score_terms: Sequence[str]
    ) -> list[Candidate]:
        lists = [space.postings.get(t, {}) for t in score_terms]
        memories = space.memories
        meta = space.meta
        found = []
        for key in keys:
            length, recorded, occurred, confidence = meta[key]
            if len(lists) == 1:
                tf: tuple[int, ...] = (lists[0].get(key, 0),)
            else:
                tf = tuple([posting.get(key, 0) for posting in lists])
            found.append(Candidate(memories[key].id, tf, length, recorded, occurred, confidence))
        return found

    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._space(namespace)
            keys: set[int] = set()
            for term in terms:
                keys.update(space.postings.get(term, ()))
            return self._candidates(space, sorted(keys), score_terms)

    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._space(namespace)
            meta = space.meta
            newest = heapq.nsmallest(
                limit, space.postings.get(term, ()), key=lambda k: (-meta[k][1], k)
            )
            return self._candidates(space, newest, score_terms)

    def supersessions(self, namespace: str, ids: Sequence[UUID]) -> list[tuple[UUID, UUID]]:
        with self._lock:
            graph = self._space(namespace).graph
            wanted = {i.int for i in ids}
            pairs = sorted(
                (u, v)
                for u in wanted
                if u in graph
                for _, v, k in graph.out_edges(u, keys=True)
                if k == "SUPERSEDES" and v in wanted
            )
            return [(UUID(int=u), UUID(int=v)) for u, v in pairs]

    def walk(self, namespace: str, start: Sequence[UUID], depth: int, max_nodes: int) -> Walk:
        with self._lock:
            space = self._space(namespace)
            graph = space.graph
            starts = {s.int for s in start if s.int in graph}
            frontier = set(starts)
            seen = set(frontier)
            reached: list[tuple[int, int]] = []
            for distance in range(1, depth + 1):
                if not frontier or len(reached) >= max_nodes:
                    break
                layer: set[int] = set()
                for node in frontier:
                    layer.update(graph.succ[node])
                    layer.update(graph.pred[node])
                layer -= seen
                seen |= layer
                reached += [(n, distance) for n in sorted(layer)]
                frontier = layer
            reached = reached[:max_nodes]
            members = starts | {n for n, _ in reached}
            links = [
                data["link"]
                for u in members
                for _, v, data in graph.out_edges(u, data=True)
                if v in members
            ]
            return Walk(
                reached=tuple((space.memories[n], d) for n, d in reached),
                links=sort_links(links),
            )

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        with self._lock:
            space = self._space(namespace)
            found: dict[tuple[UUID, UUID, str], Link] = {}
            for mid in ids:
                if mid.int in space.graph:
                    for link in self._links_touching(space, mid.int):
                        found[(link.source, link.target, link.kind.value)] = link
            return list(sort_links(list(found.values())))

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
                links=space.graph.number_of_edges(),
                beliefs=len(space.beliefs),
                terms=len(space.postings),
                events=sum(len(ev) for ev in space.events.values()),
            )

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
            page: list[Memory] = []
            for index in range(end - 1, -1, -1):
                memory = space.memories[order[index][1]]
                if kind is not None and memory.kind != kind:
                    continue
                if tag is not None and tag not in memory.tags:
                    continue
                if (since is not None and memory.when < since) or (
                    until is not None and memory.when >= until
                ):
                    continue
                page.append(memory)
                if len(page) == limit:
                    break
            return page

    def native_top_k(self, namespace: str, terms: Sequence[str], k: int) -> list[UUID]:
        """A plain BM25 top ``k`` over the inverted index (k1 1.2, b 0.75, BM25's IDF
        ``ln(1 + (N - df + 0.5) / (df + 0.5))``; each distinct term counted once), ties by id:
        the embedded store's own baseline for benchmarks. Not used by recall."""
        with self._lock:
            space = self._space(namespace)
            n_docs = len(space.memories)
            if not n_docs or k <= 0:
                return []
            avg_length = space.total_length / n_docs or 1.0
            meta = space.meta
            scores: dict[int, float] = {}
            for term in dict.fromkeys(terms):
                posting = space.postings.get(term)
                if not posting:
                    continue
                df = len(posting)
                idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
                for key, tf in posting.items():
                    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * meta[key][0] / avg_length)
                    gain = idf * tf * (BM25_K1 + 1.0) / (tf + norm)
                    scores[key] = scores.get(key, 0.0) + gain
            best = heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], item[0]))
            return [space.memories[key].id for key, _ in best]

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        with self._lock:
            space = self._space(namespace)
            memories = list(space.memories.values())
            links = sort_links(self._all_links(space))
        yield from memories
        yield from links


__all__ = [
    "FORMAT_VERSION",
    "MirrorStore",
    "Replayed",
    "lock_data_dir",
    "lock_used",
    "repair_hint",
]
