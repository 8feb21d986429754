"""Opening the embedded store's data directory: the writer's lock, the snapshot, the replay of the
log segments, the checks that refuse damage, and the cut of a torn tail before appends; and
closing it. ``graphsvc repair`` (:mod:`graphsvc.store.repair`) shares :class:`Replayed`,
:func:`lock_data_dir`, :func:`lock_used` and :func:`repair_hint`."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from uuid import UUID

import numpy as np

from graphsvc.errors import StoreCorruptError, StoreUnavailableError
from graphsvc.model import Belief, ContextEvent
from graphsvc.store import datadir, journal
from graphsvc.store.datadir import Chain
from graphsvc.store.journal import (
    CLEAN_NAME,
    LOCK_NAME,
    LOG_NAME,
    NEW_LOG_NAME,
    SNAPSHOT_NAME,
    SNAPSHOT_TMP_NAME,
    SNAPSHOT_VERSION,
    LogError,
    LogHead,
    Problem,
)
from graphsvc.store.mirror import columns
from graphsvc.store.mirror.links import link_tuples_from_rows
from graphsvc.store.mirror.rows import model_from_log_row
from graphsvc.store.mirror.state import MirrorNamespace, MirrorState
from graphsvc.store.mirror.table import Posting
from graphsvc.store.mirror.vectors import VectorTable
from graphsvc.store.mirror.writer import FORMAT_VERSION, LogWriter

logger = logging.getLogger("graphsvc.store")

#: Objects a load leaves for the cyclic collector (net of those freed) past which they are
#: frozen (:meth:`MirrorLoader._load_dir`); a million memories leave about four million.
FREEZE_AFTER = 1_000_000
#: The records of a version-3 snapshot that hold binary columns.
_COLUMN_OPS = frozenset({"terms", "columns", "postings", "linkColumns"})


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


def data_dir_holder(root: Path) -> str | None:
    """The pid (as ``LOCK`` records it) of the process that holds ``root`` as its writer now,
    or None when none does (or ``root`` has no ``LOCK`` yet). Takes and drops the lock without
    writing to it."""
    try:
        probe = open(root / LOCK_NAME, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return probe.read().strip() or "unknown"
            raise
        fcntl.flock(probe, fcntl.LOCK_UN)
        return None


def lock_used(root: Path) -> bool:
    """Whether a writer has held this directory: ``LOCK`` holds a pid (written before any log
    is created; an empty one is a first open that failed before it)."""
    try:
        return (root / LOCK_NAME).stat().st_size > 0
    except FileNotFoundError:
        return False


class MirrorLoader:
    """Opening a data directory (lock, snapshot, replay, checks, getting the log ready for
    appends) and closing it: the part of :class:`~graphsvc.store.mirror.MirrorStore` that
    fills the state from the files and hands the active log to the writer.

    Args:
        state: the namespaces to load into.
        log: the log writer, which carries ``seq`` and the active segment on.
        data_dir: the data directory, or None (an in-memory store: nothing to load).
        read_only: take no lock, change no file.
    """

    def __init__(
        self, state: MirrorState, log: LogWriter, data_dir: Path | None, *, read_only: bool
    ) -> None:
        self._state = state
        self._log = log
        self._dir = data_dir
        self._read_only = read_only
        self._lock_file: IO[str] | None = None
        self._created_lock = False  # this open created LOCK (a brand-new directory)

    # -- lifecycle -------------------------------------------------------------------------------

    def open(self) -> None:
        """Load the data directory (see the module docstring).

        Raises:
            StoreUnavailableError: another process writes the directory, or a file cannot be
                read or written.
            StoreCorruptError: damage, or a missing or foreign log; the message names the file
                and line and says how to recover.
        """
        with self._log.lock:
            if self._log.is_open:
                return
            if self._dir is not None:
                self._load_dir(self._dir)
            self._log.is_open = True

    def close(self) -> None:
        """Finish a running compaction, leave the clean-close marker, release the lock."""
        with self._log.lock:
            self._log.wait_for_compaction()
            self._log.close()
            if self._lock_file is not None:
                self._lock_file.close()  # releases the flock
                self._lock_file = None
            self._log.is_open = False

    def ping(self) -> None:
        if not self._log.is_open:
            raise StoreUnavailableError("the embedded store is not open: call open() first")

    def _load_dir(self, root: Path) -> None:
        # Loading creates millions of objects that all live on: the cyclic garbage collector
        # would traverse them again and again for nothing (a third of the time). It is paused
        # for the load (process-wide, for those seconds) and left as it was. After a large load
        # the objects it made are frozen (gc.freeze: moved out of the collector's generations),
        # or else the collector's next passes would each traverse them all once (a second at a
        # million memories, paid by the first request or two). Freezing is process-wide too:
        # whatever lives at that moment is never traversed again, so a reference cycle among
        # those objects that later becomes garbage stays; the store's tables hold none
        # (reference counting frees them when a closed store is dropped).
        paused = gc.isenabled()
        gc.disable()
        try:
            self._load_files(root)
        finally:
            if paused:
                gc.enable()
        if paused and gc.get_count()[0] > FREEZE_AFTER:
            gc.freeze()

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
                self.load_snapshot(chain.snapshot)
            replayed = self.replay(chain)
            self._check_replay(chain, replayed)
            if not self._read_only:
                self._prepare_writes(chain, replayed)
            elif replayed.problem is not None and chain.active is not None:
                logger.info(
                    "%s ends with an incomplete record (%s, line %d): a write in progress or one "
                    "that was never acknowledged; a read-only open leaves it",
                    chain.active.path,
                    replayed.problem.reason,
                    replayed.problem.line,
                )
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
        self._state.clear()
        self._log.reset()

    def _inspect(self, root: Path, lock_existed: bool) -> Chain:
        """What to load. A read-only open races the writer's compaction (a segment renamed, a
        snapshot replaced between two reads), so it reads again before it believes a problem."""
        attempts = 1 if not self._read_only else 4
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                chain = datadir.inspect(root, lock_existed=lock_existed)
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

    def load_snapshot(self, snapshot: datadir.Snapshot) -> None:
        """Load a verified snapshot into an empty store.

        Raises:
            LogError: a frame that verifies but holds no valid rows.
        """
        self._log.seq = snapshot.head.seq
        self._log.gen = snapshot.head.gen
        if snapshot.legacy is not None:
            try:
                self._load_legacy_snapshot(snapshot.legacy)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise LogError(snapshot.path, 1, 0, f"not a valid snapshot ({exc!r})") from exc
            return
        first_rows: dict[str, int] = {}  # where each namespace's rows start (version 3)
        order: dict[str, list[tuple[int, int]]] = {}  # their eviction order, sorted once
        for frame in snapshot.frames:
            try:
                value = frame.record()
                op, ns = value["op"], value["ns"]
                space = self._state.space(ns)
                if op in _COLUMN_OPS and snapshot.head.version == SNAPSHOT_VERSION:
                    self._load_column_record(space, op, value, first_rows, order)
                    continue
                if op == "vectorModel":
                    space.model = model_from_log_row(value["model"])
                    continue
                if op == "vectors":
                    self._load_vectors(space, value)
                    continue
                rows = value["rows"]
                if op == "memories":
                    space.add_rows(rows)
                elif op == "links":
                    space.graph.add_many(link_tuples_from_rows(rows))
                elif op == "beliefs":
                    for row in rows:
                        space.add_belief(Belief.model_validate(row))
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
        for ns, pending in order.items():
            self._state.space(ns).order.update(pending)

    @staticmethod
    def _load_column_record(
        space: MirrorNamespace,
        op: str,
        value: dict[str, Any],
        first_rows: dict[str, int],
        order: dict[str, list[tuple[int, int]]],
    ) -> None:
        """Load a record of a version-3 snapshot's columns (:mod:`~graphsvc.store.mirror.columns`).

        Raises:
            ValueError: the record does not fit (sizes, ranges, repeats).
        """
        table = space.memories
        if op == "terms":
            columns.load_terms(table, value)
        elif op == "columns":
            first_rows.setdefault(table.namespace, len(table.ids))
            added = columns.load_columns(table, value)
            first, stop = added.start, added.stop
            pending = order.setdefault(table.namespace, [])
            pending += zip(table.recorded[first:stop], table.keys[first:stop], strict=True)
            space.total_length += int(np.frombuffer(table.lengths, dtype=np.int32)[first:].sum())
            space.facets.add(table, added)
        elif op == "postings":
            first = first_rows.get(table.namespace, len(table.ids))
            postings = space.postings
            for term, rows, tfs in columns.load_postings(table, first, value):
                if term in postings:
                    raise ValueError(f"the postings of {term!r} twice")
                posting = postings[term] = Posting()
                posting.rows.frombytes(rows)
                posting.tfs.frombytes(tfs)
        else:  # linkColumns
            space.graph.add_many(columns.load_links(value, table))

    @staticmethod
    def _load_vectors(space: MirrorNamespace, value: dict[str, Any]) -> None:
        """Load a snapshot's chunk of vectors (ids as 16 bytes each, int8 codes, base64; the first
        chunk of a namespace says how many there are in all).

        Raises:
            ValueError: the chunk does not fit the namespace (wrong sizes or dimension, a vector
                of a memory that is not stored).
        """
        dimension = value["dimension"]
        ids = columns.decode_base64(value["ids"])
        codes = np.frombuffer(columns.decode_base64(value["codes"]), dtype=np.int8)
        count = len(ids) // 16
        if not isinstance(dimension, int) or dimension < 1 or len(ids) % 16:
            raise ValueError("a vectors record with a bad dimension or id list")
        if len(codes) != count * dimension:
            raise ValueError(f"{len(codes)} codes for {count} vectors of dimension {dimension}")
        table = space.vectors
        if table is None:
            table = space.vectors = VectorTable(dimension)
            table.reserve(value.get("total", 0))  # how many the snapshot holds
        elif table.dimension != dimension:
            raise ValueError(f"vectors of dimension {dimension} beside ones of {table.dimension}")
        memories = space.memories
        keys = [int.from_bytes(ids[at : at + 16], "big") for at in range(0, len(ids), 16)]
        if len(set(keys)) != len(keys):
            raise ValueError("a vectors record names a memory twice")
        missing = [key for key in keys if key not in memories]
        if missing:
            raise ValueError(f"a vector of memory {UUID(int=missing[0])}, which is not stored")
        table.put([memories.uuid(key) for key in keys], codes.reshape(count, dimension))

    def _load_legacy_snapshot(self, data: dict[str, Any]) -> None:
        for ns, body in data["namespaces"].items():
            space = self._state.space(ns)
            space.add_rows(body["memories"])
            space.graph.add_many(link_tuples_from_rows(body["links"]))
            for row in body["beliefs"]:
                space.add_belief(Belief.model_validate(row))
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
                        "damaged",
                        problem.line,
                        problem.offset,
                        f"{problem.reason}, in a segment that is not the last one",
                    )
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
            last = self._log.seq
            if seq <= last:
                if out.applied:
                    return f"seq {seq} does not follow seq {last}"
                return None  # already in the snapshot (a compaction was cut short)
            if seq != last + 1:
                return f"seq {seq} follows seq {last}: records {last + 1}..{seq - 1} are missing"
            self._state.apply(record)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            return f"not a valid log record ({type(exc).__name__}: {exc})"
        except StoreCorruptError as exc:
            return str(exc)
        self._log.seq = seq
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
            self._log.head = chain.segments[-1].head
            self._log.gen = max(self._log.gen, self._log.head.gen)
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
                    path,
                    problem.line,
                    problem.offset,
                    f"damaged: {problem.reason} at the end of a log that was closed cleanly at "
                    f"seq {marker.seq}: it is not a torn write, the file was changed after close",
                )
        active = chain.active
        if marker is not None and active is not None:
            if active.head.log != marker.log:
                raise LogError(
                    active.path,
                    1,
                    0,
                    f"the store was closed cleanly with log {marker.log}, but this is "
                    f"{active.describe()}: the log was replaced",
                )
            if self._log.seq != marker.seq:
                scan = active.scan
                raise LogError(
                    active.path,
                    len(scan.frames) + 1,
                    scan.end,
                    f"the log ends at seq {self._log.seq} but the store was closed cleanly at seq "
                    f"{marker.seq}: acknowledged records are missing (the file was cut)",
                )

    def _prepare_writes(self, chain: Chain, replayed: Replayed) -> None:
        """Make the directory ready for appends: give the store an id if it has none, tidy what
        a crash left (:meth:`_tidy`), open the active log (:meth:`_open_log`; a brand-new store
        gets its first one), and finish an interrupted compaction or migrate a version-1 log.

        Raises:
            OSError: a file cannot be changed.
        """
        root = chain.root
        store = chain.store
        if store is None:
            # A new store, or one made before store ids: it keeps the id its headers carry, if
            # any, and the headers written from now on carry it.
            heads = [seg.head.store for seg in reversed(chain.segments)]
            if chain.snapshot is not None:
                heads.append(chain.snapshot.head.store)
            store = next((s for s in heads if s is not None), None) or journal.new_log_id()
            if chain.segments or chain.snapshot is not None:
                datadir.write_store_id(root, store)
            # A brand-new store writes it after its first log (below): store.json without a log
            # is then always a store whose log is gone.
        self._log.store_id = store
        self._tidy(chain)
        if not chain.segments:  # a brand-new store
            head = LogHead(journal.new_log_id(), gen=0, base=0, prev=None, store=store)
            self._log.install_segment(head)
            if chain.store is None and chain.snapshot is None:
                datadir.write_store_id(root, store)
            return
        self._open_log(chain, replayed)
        active = chain.segments[-1]
        if active.head.log is None:
            logger.warning(
                "%s is a version-1 log (no checksums): migrating it by taking a snapshot now",
                root / LOG_NAME,
            )
            self._log.compact(rotate=True, background=False, raise_errors=False)
        elif len(chain.segments) > 1:
            logger.warning("%s: finishing a compaction that was cut short", root)
            self._log.compact(rotate=False, background=False, raise_errors=False)

    @staticmethod
    def _tidy(chain: Chain) -> None:
        """Drop the clean-close marker (this writer will append), finish an interrupted segment
        switch, and delete what a crash left that holds nothing needed: a segment never
        switched in, segments the snapshot holds, a snapshot cut short.

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
                root,
                NEW_LOG_NAME,
                LOG_NAME,
            )
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

    def _open_log(self, chain: Chain, replayed: Replayed) -> None:
        """Open the active log for appends: cut a torn tail (with a warning), complete a
        missing final newline, and hand it to the writer.

        Raises:
            OSError: the log cannot be changed or opened.
        """
        log_path = chain.root / LOG_NAME
        scan = chain.segments[-1].scan
        problem = replayed.problem
        end = scan.size
        if problem is not None:  # a torn tail after a crash: _check_replay refused the rest
            end = replayed.kept[len(chain.segments) - 1]
            os.truncate(log_path, end)
            logger.warning(
                "cut a torn last record from %s: %d bytes from byte %d (line %d), a write that "
                "was never acknowledged (%s); the %d records replayed before it are intact",
                log_path,
                scan.size - end,
                end,
                problem.line,
                problem.reason,
                replayed.applied,
            )
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
        self._log.resume(fd, end)
        if problem is None and scan.missing_newline:
            journal.write_all(fd, b"\n")
            end += 1
            logger.warning(
                "%s: the last record verifies but its final newline was missing; added it",
                log_path,
            )
        if self._log.fsync or problem is not None or scan.missing_newline:
            os.fsync(fd)
        self._log.resume(fd, end)
