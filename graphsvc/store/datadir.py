"""How a data directory's files fit together: the snapshot read and verified, the clean-close
marker, the store's identity (``store.json``), and the chain of log segments an open replays
after the snapshot, with what it refuses (:attr:`Chain.refusal`). The files' format is
:mod:`graphsvc.store.journal`; the mirror (:mod:`graphsvc.store.mirror`) opens what
:func:`inspect` finds and :mod:`graphsvc.store.repair` mends it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from graphsvc.store.journal import (
    CLEAN_NAME,
    LEGACY_PREV,
    LEGACY_VERSION,
    LOCK_NAME,
    LOG_NAME,
    NEW_LOG_NAME,
    OLD_LOG_NAME,
    SNAPSHOT_NAME,
    SNAPSHOT_VERSIONS,
    STORE_NAME,
    Frame,
    LogError,
    LogHead,
    Scan,
    SnapshotHead,
    encode,
    fsync_dir,
    log_head,
    scan_file,
    scan_frames,
    write_file,
)

# -- the snapshot, the marker, the store's identity ----------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """A snapshot read and verified: its head and the body frames (version 2) or the whole
    document (version 1)."""

    path: Path
    head: SnapshotHead
    frames: list[Frame]
    legacy: dict[str, Any] | None = None


def read_snapshot(path: Path) -> Snapshot:
    """Read and verify a snapshot (either version).

    Raises:
        LogError: the file does not verify (a snapshot is renamed into place complete, so any
            problem is damage).
        OSError: the file cannot be read.
    """
    data = path.read_bytes()
    if data[:1] == b"{":
        try:
            legacy = orjson.loads(data)
        except ValueError as exc:
            raise LogError(path, 1, 0, f"not valid JSON ({exc})") from exc
        if not isinstance(legacy, dict) or legacy.get("version") != LEGACY_VERSION:
            version = legacy.get("version") if isinstance(legacy, dict) else None
            raise LogError(path, 1, 0, f"format {version!r} is not one this version reads")
        if not isinstance(legacy.get("seq"), int):
            raise LogError(path, 1, 0, "a version-1 snapshot without a seq")
        head = SnapshotHead(version=LEGACY_VERSION, gen=0, seq=legacy["seq"], log=None)
        return Snapshot(path, head, [], legacy)
    scan = scan_frames(path, data)
    if scan.problem is not None:
        raise scan.problem.error(path)
    if len(scan.frames) < 2:
        raise LogError(path, 1, 0, "the snapshot is incomplete")
    try:
        first = scan.frames[0].record()
        last = scan.frames[-1].record()
        if first["op"] != "snapshot" or first["version"] not in SNAPSHOT_VERSIONS:
            raise ValueError("the first record is no snapshot header of a format this reads")
        if last["op"] != "end" or last["frames"] != len(scan.frames):
            raise ValueError("the snapshot does not end with its end record")
        head = SnapshotHead(
            first["version"],
            int(first["gen"]),
            int(first["seq"]),
            first["log"],
            first.get("store"),
        )
        if not (head.store is None or isinstance(head.store, str)):
            raise ValueError("the snapshot's store id is no string")
    except (KeyError, TypeError, ValueError) as exc:
        raise LogError(path, 1, 0, str(exc)) from exc
    return Snapshot(path, head, scan.frames[1:-1])


@dataclass(frozen=True)
class Marker:
    """What a clean close left: the active log's id and its last ``seq``."""

    log: str
    seq: int


def read_marker(path: Path) -> Marker | None:
    """The clean-close marker, or None when there is none.

    A marker is renamed into place whole (:func:`write_marker`), so one that does not verify is
    damage, not "no marker": it is the only record of where a cleanly closed log ends, and
    without it a log cut at a record boundary after the close would load as if whole.

    Raises:
        LogError: the file exists but does not verify.
        OSError: the file exists but cannot be read.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    scan = scan_frames(path, data)
    problem = scan.problem.reason if scan.problem is not None else None
    if problem is None and len(scan.frames) != 1:
        problem = f"{len(scan.frames)} records where it holds one"
    if problem is None:
        try:
            value = scan.frames[0].record()
            return Marker(log=str(value["log"]), seq=int(value["seq"]))
        except (KeyError, TypeError, ValueError) as exc:
            problem = f"not a marker record ({exc!r})"
    raise LogError(
        path,
        1,
        0,
        f"the clean-close marker cannot be read ({problem}), so whether the log was cut after "
        "the store was closed cannot be checked",
    )


def read_store_id(path: Path) -> str | None:
    """The store's id from ``store.json``, or None when there is none (a store made before it).

    Raises:
        LogError: the file exists but does not verify (it is renamed into place whole).
        OSError: the file exists but cannot be read.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    scan = scan_frames(path, data)
    if scan.problem is None and len(scan.frames) == 1:
        try:
            value = scan.frames[0].record()
        except ValueError:
            value = None
        if isinstance(value, dict) and value.get("op") == "store":
            store = value.get("store")
            if isinstance(store, str) and store:
                return store
    raise LogError(path, 1, 0, "the store's identity cannot be read")


def write_marker(root: Path, marker: Marker) -> None:
    """Write the clean-close marker atomically.

    Raises:
        OSError: it cannot be written.
    """
    tmp = root / (CLEAN_NAME + ".tmp")
    write_file(tmp, [encode({"op": "closed", "log": marker.log, "seq": marker.seq})])
    os.replace(tmp, root / CLEAN_NAME)
    fsync_dir(root)


def write_store_id(root: Path, store: str) -> None:
    """Write ``store.json`` atomically.

    Raises:
        OSError: it cannot be written.
    """
    tmp = root / (STORE_NAME + ".tmp")
    write_file(tmp, [encode({"op": "store", "store": store})])
    os.replace(tmp, root / STORE_NAME)
    fsync_dir(root)


# -- how the files of a data directory fit together ----------------------------------------------


@dataclass
class Segment:
    """A log segment to replay."""

    path: Path
    scan: Scan
    head: LogHead

    def describe(self) -> str:
        """What the segment is, for messages."""
        return "an empty file" if self.scan.size == 0 else self.head.describe()


@dataclass
class Chain:
    """What opening a data directory replays, and what it finds wrong.

    Attributes:
        root: the data directory.
        snapshot: the verified snapshot, or None.
        segments: the log segments to replay after the snapshot, oldest first (the last one is
            the active log; empty when there is no log at all).
        stale: segments the snapshot wholly covers (a writer deletes them).
        roll_forward: ``log.new.jsonl`` to rename to ``log.jsonl`` (a crash between the two
            renames of a segment switch), or None.
        leftover_new: ``log.new.jsonl`` that was never switched in (a writer deletes it).
        marker: the clean-close marker, or None.
        store: the store's id from ``store.json``, or None (a store made before it, or a new one).
        refusal: why the files cannot be opened as they are (a missing, foreign or orphaned log),
            or None. Damage inside a segment is not a refusal: it is found while replaying.
        refusal_kind: ``missing-log``, ``empty-log``, ``foreign-log`` or ``missing-snapshot``,
            or None.
    """

    root: Path
    snapshot: Snapshot | None = None
    segments: list[Segment] = field(default_factory=list)
    stale: list[Path] = field(default_factory=list)
    roll_forward: Path | None = None
    leftover_new: Path | None = None
    marker: Marker | None = None
    store: str | None = None
    refusal: str | None = None
    refusal_kind: str | None = None

    @property
    def active(self) -> Segment | None:
        """The segment a writer appends to (the last one)."""
        return self.segments[-1] if self.segments else None

    @property
    def start_seq(self) -> int:
        """The sequence number the state has before the segments are replayed."""
        return 0 if self.snapshot is None else self.snapshot.head.seq


def _segment(path: Path) -> Segment:
    scan = scan_file(path)
    return Segment(path, scan, log_head(scan))


def inspect(root: Path, *, lock_existed: bool) -> Chain:
    """Read a data directory's snapshot and log segments and decide what to replay.

    Args:
        root: the data directory (it may not exist: a brand-new store).
        lock_existed: whether ``LOCK`` held a writer's pid before this open (a writer has
            used the directory, so it had a log).

    Raises:
        LogError: the snapshot, or a segment's header, does not verify.
        OSError: a file cannot be read.
    """
    chain = Chain(root=root)
    chain.marker = read_marker(root / CLEAN_NAME)
    chain.store = read_store_id(root / STORE_NAME)
    _read_snapshot_of(chain)
    log_path, new_path = root / LOG_NAME, root / NEW_LOG_NAME
    active_path: Path | None = log_path if log_path.exists() else None
    if new_path.exists():
        if active_path is None:
            # A crash between the two renames of a switch (or before the first log's rename):
            # the new segment holds nothing acknowledged yet, and the checks below still apply.
            chain.roll_forward = new_path
            active_path = new_path
        else:
            chain.leftover_new = new_path
    if active_path is None:
        _refuse_missing_log(chain, lock_existed)
        return chain
    active = _segment(active_path)
    if _refuse_empty_or_foreign(chain, active):
        return chain
    _chain_segments(chain, active)
    return chain


def _read_snapshot_of(chain: Chain) -> None:
    """Read the directory's snapshot, if any, into ``chain``.

    Raises:
        LogError: it does not verify, or it names another store than ``store.json``.
    """
    root, store = chain.root, chain.store
    snapshot_path = root / SNAPSHOT_NAME
    if not snapshot_path.exists():
        return
    chain.snapshot = read_snapshot(snapshot_path)
    theirs = chain.snapshot.head.store
    if store is not None and theirs is not None and theirs != store:
        raise LogError(
            root / STORE_NAME,
            1,
            0,
            f"{STORE_NAME} says this directory is store {store}, but {snapshot_path} is of "
            f"store {theirs}: one of them was replaced by another store's",
        )


def _refuse_missing_log(chain: Chain, lock_existed: bool) -> None:
    """There is no log: a new store, unless a file says the store had one (then refused)."""
    root, snap, store = chain.root, chain.snapshot, chain.store
    evidence = []
    if snap is not None:
        evidence.append(f"{SNAPSHOT_NAME} (seq {snap.head.seq})")
    if chain.marker is not None:
        evidence.append(f"{CLEAN_NAME} (closed at seq {chain.marker.seq})")
    if (root / OLD_LOG_NAME).exists():
        evidence.append(OLD_LOG_NAME)
    if store is not None:
        # Written only after the store's first log: a store that had a log.
        evidence.append(f"{STORE_NAME} (store {store})")
    if lock_existed and not evidence:
        evidence.append(f"{LOCK_NAME} (a writer has used this directory)")
    if evidence:
        chain.refusal_kind = "missing-log"
        chain.refusal = (
            f"{root / LOG_NAME} is missing, but {' and '.join(evidence)} say(s) the store had a "
            "log: it was deleted or moved. Put it back, or accept the loss"
        )


def _refuse_empty_or_foreign(chain: Chain, active: Segment) -> bool:
    """Whether the active log ends the inspection: an empty log (refused, unless it is the
    first open's, cut short before its header) or a log of another store (refused)."""
    root, snap, store = chain.root, chain.snapshot, chain.store
    if active.scan.size == 0 and (snap is None or snap.head.version != LEGACY_VERSION):
        fresh = snap is None and chain.marker is None and not (root / OLD_LOG_NAME).exists()
        if chain.roll_forward is not None and fresh:
            # A crash of the first open before the first log had its header: nothing was ever
            # acknowledged, the store is new.
            chain.roll_forward = None
            chain.leftover_new = root / NEW_LOG_NAME
            return True
        chain.refusal_kind = "empty-log"
        chain.refusal = (
            f"{active.path} is empty (0 bytes): it lost its header, and every record after it "
            "(a truncate, or a file system that lost the file's data in a crash); it is not "
            "loaded as an empty store. Restore it from a backup, or accept the loss (a directory "
            "of graphsvc before checksums that was never written loses nothing)"
        )
        return True
    if store is not None and active.head.store not in (None, store):
        chain.refusal_kind = "foreign-log"
        chain.refusal = (
            f"{active.path} is a log of store {active.head.store}, but {root / STORE_NAME} says "
            f"this directory is store {store}: the log was replaced by another store's"
        )
        return True
    return False


def _chain_segments(chain: Chain, active: Segment) -> None:
    """Put the segments to replay in ``chain`` (the retired one, if it continues into the
    active log and the snapshot does not hold it yet, then the active log), or refuse them."""
    root, snap = chain.root, chain.snapshot
    old_path = root / OLD_LOG_NAME
    old = None
    if old_path.exists():
        try:
            old = _segment(old_path)
        except LogError:
            if snap is None or snap.head.log != active.head.log:
                raise
            chain.stale.append(old_path)  # wholly in the snapshot: its damage does not matter
    if old is not None and active.head.prev != (old.head.log or LEGACY_PREV):
        # The old segment is not the one before the active log: it cannot be the retired half
        # of a compaction. Only a snapshot that names the active log makes it irrelevant.
        if snap is not None and snap.head.log == active.head.log:
            chain.stale.append(old.path)
            old = None
        else:
            chain.refusal_kind = "foreign-log"
            chain.refusal = (
                f"{old.path} ({old.describe()}) is not the segment before {active.path} "
                f"({active.describe()})"
            )
            return
    if snap is not None and snap.head.log is not None:
        if snap.head.log == active.head.log:
            if old is not None:
                chain.stale.append(old.path)
            chain.segments = [active]
        elif old is not None and snap.head.log == old.head.log:
            chain.segments = [old, active]
        else:
            chain.refusal_kind = "foreign-log"
            chain.refusal = (
                f"{active.path} is {active.describe()}, but {root / SNAPSHOT_NAME} (generation "
                f"{snap.head.gen}, seq {snap.head.seq}) continues into log {snap.head.log}: the "
                "log was replaced by one from another store or generation"
            )
        return
    chain.segments = [seg for seg in (old, active) if seg is not None]
    first = chain.segments[0].head
    start = chain.start_seq
    if first.base > start:
        chain.refusal_kind = "missing-snapshot"
        snapshot_path = root / SNAPSHOT_NAME
        have = f"{snapshot_path} stops at seq {start}" if snap else f"{snapshot_path} is missing"
        chain.refusal = (
            f"{chain.segments[0].path} continues from seq {first.base} (generation {first.gen}), "
            f"but {have}: the records up to seq {first.base} are gone"
        )
