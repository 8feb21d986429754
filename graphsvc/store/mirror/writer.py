"""The embedded store's log writer: every write is one frame appended and made durable before the
call returns, a failed append is rolled back, and past ``snapshot_bytes`` of log a compaction
switches to a new segment and writes the snapshot in the background. The file format is
:mod:`graphsvc.store.journal`; :mod:`graphsvc.store.mirror` tells the whole story."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graphsvc.errors import StoreUnavailableError
from graphsvc.store import datadir, journal
from graphsvc.store.journal import (
    LEGACY_PREV,
    LOG_NAME,
    NEW_LOG_NAME,
    OLD_LOG_NAME,
    SNAPSHOT_NAME,
    SNAPSHOT_TMP_NAME,
    SNAPSHOT_VERSION,
    LogHead,
    SnapshotHead,
)
from graphsvc.store.mirror.snapshot import Capture, capture, snapshot_frames, snapshot_frames_v2
from graphsvc.store.mirror.state import MirrorState

logger = logging.getLogger("graphsvc.store")

FORMAT_VERSION = journal.FORMAT_VERSION


class LogWriter:
    """Appending records to the log durably, rolling back an append that failed, and compaction:
    the part of :class:`~graphsvc.store.mirror.MirrorStore` that owns the active log segment.
    Every method but :meth:`write_snapshot` runs under the store's ``lock``.

    Args:
        state: the namespaces a record is applied to once it is durable.
        lock: the store's lock.
        data_dir: the data directory, or None (nothing is written: the store lives in memory).
        fsync: make every append durable before it is acknowledged.
        snapshot_bytes: the log's size past which a compaction starts.
        read_only: refuse every write.
    """

    def __init__(
        self,
        state: MirrorState,
        lock: threading.RLock,
        data_dir: Path | None,
        *,
        fsync: bool,
        snapshot_bytes: int,
        read_only: bool,
    ) -> None:
        self.state = state
        self.lock = lock
        self.dir = data_dir
        self.fsync = fsync
        self.snapshot_bytes = snapshot_bytes
        self.read_only = read_only
        self.is_open = False
        #: The ``seq`` of the last record applied (loaded, replayed or written); 0 before any.
        self.seq = 0
        self.gen = 0
        self.head: LogHead | None = None  # the active segment's header
        self.store_id: str | None = None  # the store's id (store.json), once a writer opened
        self._fd: int | None = None
        self._end = 0  # bytes of the active log that hold acknowledged records
        # Why writes are refused after a failure that could not be rolled back, or None; with
        # the offset to cut back to when a retry may clear it.
        self.broken: str | None = None
        self._broken_offset: int | None = None
        self._compactor: threading.Thread | None = None
        self._compact_after = 0  # after a failed compaction: log size before the next attempt

    @property
    def appending(self) -> bool:
        """Whether an active log is open for appends."""
        return self._fd is not None

    def reset(self) -> None:
        """Forget the log (after an open that failed: the next open starts afresh)."""
        self.seq = self.gen = self._end = 0
        self.head = None
        self.store_id = None
        self.broken = self._broken_offset = None

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

    # -- the log ---------------------------------------------------------------------------------

    def write(self, record: dict[str, Any], apply: Callable[[], None] | None = None) -> None:
        """Append a record and make it durable; then apply it (with ``apply``, which changes the
        state from the objects at hand, or by replaying the record).

        Raises:
            StoreUnavailableError: the store is read-only or closed, or the log cannot be
                written; nothing was written or applied.
        """
        if self.read_only:
            raise StoreUnavailableError("this store was opened read-only; writes are refused")
        if not self.is_open:
            raise StoreUnavailableError("the embedded store is not open: call open() first")
        if self.broken is not None:
            self._retry_rollback()
        record["seq"] = self.seq + 1
        if self._fd is not None:
            self._append(journal.encode_parts(record))
        if apply is None:
            self.state.apply(record)
        else:
            apply()
        self.seq = record["seq"]
        if self._fd is not None and self._end > max(self.snapshot_bytes, self._compact_after):
            self._start_compaction()

    def resume(self, fd: int, end: int) -> None:
        """Append to the active log from now on: ``fd`` opened for appends, ``end`` the bytes
        that hold its acknowledged records."""
        self._fd = fd
        self._end = end

    def close(self) -> None:
        """Close the active log; after a clean run (open, nothing broken), sync it first and
        leave the clean-close marker."""
        if self._fd is None:
            return
        clean = self.is_open and self.broken is None and self.head is not None
        try:
            if clean:
                os.fsync(self._fd)
        except OSError as exc:
            clean = False
            logger.error("cannot sync %s at close (%s)", self.log_path(), exc.strerror)
        finally:
            os.close(self._fd)
            self._fd = None
        if clean and self.dir is not None and self.head is not None:
            marker = datadir.Marker(log=str(self.head.log), seq=self.seq)
            try:
                datadir.write_marker(self.dir, marker)
            except OSError as exc:
                logger.warning(
                    "could not write %s in %s (%s): the next open cannot tell a torn "
                    "write from damage at the end of the log",
                    journal.CLEAN_NAME,
                    self.dir,
                    exc.strerror,
                )

    def _append(self, frame: Sequence[bytes]) -> None:
        """Append a frame (in parts, :func:`~graphsvc.store.journal.encode_parts`) at the end of
        the acknowledged log, durably; on failure, cut the file back so that nothing of it
        stays.

        Raises:
            StoreUnavailableError: the frame could not be written (nothing of it stays, or, if
                even the cut failed, writes are refused until it succeeds).
        """
        fd = self._fd
        assert fd is not None
        start = self._end
        try:
            journal.write_all_parts(fd, frame)
            if self.fsync:
                os.fdatasync(fd)
        except OSError as exc:
            self._roll_back(start, exc)
        self._end = start + sum(map(len, frame))

    def log_path(self) -> Path:
        assert self.dir is not None
        return self.dir / LOG_NAME

    def _roll_back(self, offset: int, exc: OSError) -> None:
        fd = self._fd
        assert fd is not None
        path = self.log_path()
        try:
            os.ftruncate(fd, offset)
            os.fsync(fd)
        except OSError as again:
            self.broken = (
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
        offset, fd = self._broken_offset, self._fd
        if offset is not None and fd is not None:
            try:
                os.ftruncate(fd, offset)
                os.fsync(fd)
            except OSError:
                pass
            else:
                self.broken = self._broken_offset = None
                return
        raise StoreUnavailableError(f"writes are refused: {self.broken}; reopen the store")

    # -- compaction ------------------------------------------------------------------------------

    def snapshot(self, *, version: int = SNAPSHOT_VERSION) -> None:
        """Compact now and wait: switch to a new log segment, write the whole state to
        ``snapshot.json`` and delete the retired segment.

        Args:
            version: the snapshot's format: 3 (binary columns), or 2 (JSON rows, what graphsvc
                wrote before; for tests that build a directory of an earlier version).

        Raises:
            StoreUnavailableError: the snapshot cannot be written (the log still holds every
                record: nothing is lost).
        """
        with self.lock:
            if self.dir is None or self._fd is None:
                return
            self.wait_for_compaction()
            try:
                self.compact(rotate=True, background=False, raise_errors=True, version=version)
            except OSError as exc:
                raise StoreUnavailableError(
                    f"cannot write a snapshot in {self.dir} ({exc.strerror}); the log still "
                    "holds every write"
                ) from exc

    def _start_compaction(self) -> None:
        """Start a background compaction unless one runs (called by a write, lock held)."""
        if self.compacting or self.broken is not None:
            return
        try:
            self.compact(rotate=True, background=True, raise_errors=False)
        except OSError as exc:
            self._compact_after = self._end + max(self.snapshot_bytes // 4, 1)
            logger.error(
                "could not start a compaction in %s (%s); the log keeps every write, next "
                "attempt past %d bytes",
                self.dir,
                exc.strerror,
                self._compact_after,
            )

    def compact(
        self,
        *,
        rotate: bool,
        background: bool,
        raise_errors: bool,
        version: int = SNAPSHOT_VERSION,
    ) -> None:
        """Switch to a new segment (``rotate``, unless a retired one is still there), capture the
        state, and write the snapshot (in a thread when ``background``). Lock held.

        Raises:
            OSError: the switch failed; or the snapshot failed, with ``raise_errors`` (else
                that is logged: the log keeps every write).
        """
        assert self.dir is not None
        if rotate and not (self.dir / OLD_LOG_NAME).exists():
            self.rotate()
        captured = self.capture(version)
        if background:
            thread = threading.Thread(
                target=self.write_snapshot,
                args=(captured, False),
                name="graphsvc-compaction",
                daemon=True,
            )
            self._compactor = thread
            thread.start()
        else:
            self.write_snapshot(captured, raise_errors)

    def install_segment(self, head: LogHead) -> int:
        """Write ``log.new.jsonl`` with its header (fsynced) and rename it to ``log.jsonl``;
        the active log becomes it. Returns the new descriptor.

        Raises:
            OSError: it cannot be written (nothing changed then).
        """
        assert self.dir is not None
        new_path = self.dir / NEW_LOG_NAME
        frame = journal.encode(head.record())
        fd = os.open(new_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        try:
            journal.write_all(fd, frame)
            os.fsync(fd)
        except OSError:
            os.close(fd)
            new_path.unlink(missing_ok=True)
            raise
        os.replace(new_path, self.dir / LOG_NAME)
        journal.fsync_dir(self.dir)
        self._switch_to(fd, len(frame), head)
        return fd

    def _switch_to(self, fd: int, end: int, head: LogHead) -> None:
        """Make ``fd`` (a new segment of ``end`` bytes with ``head``) the active log."""
        if self._fd is not None:
            os.close(self._fd)
        self._fd = fd
        self._end = end
        self.head = head
        self.gen = head.gen

    def rotate(self) -> None:
        """Retire the active log as ``log.old.jsonl`` and continue in a new segment. Lock held.

        Raises:
            OSError: the switch failed; the active log is unchanged (or, if even undoing the
                switch failed, writes are refused until a reopen finishes it).
        """
        assert self.dir is not None and self.head is not None
        root = self.dir
        prev = self.head.log or LEGACY_PREV
        head = LogHead(
            journal.new_log_id(),
            gen=self.gen + 1,
            base=self.seq,
            prev=prev,
            store=self.store_id,
        )
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
                self.broken = f"a log switch in {root} failed half-way ({exc.strerror})"
                self._broken_offset = None
            raise
        self._switch_to(fd, len(frame), head)

    def capture(self, version: int = SNAPSHOT_VERSION) -> Capture:
        """The state now, for a snapshot continued by the active log (lock held)."""
        assert self.head is not None
        head = SnapshotHead(
            version, gen=self.gen, seq=self.seq, log=self.head.log, store=self.store_id
        )
        return capture(self.state, head)

    def write_snapshot(self, captured: Capture, raise_errors: bool) -> None:
        """Write the captured state to ``snapshot.json`` (temporary file, fsync, rename), then
        delete the retired segment. Runs without the store's lock.

        Raises:
            Exception: with ``raise_errors``, why the snapshot could not be written (the log and
                the previous snapshot are untouched; without it, the failure is logged).
        """
        assert self.dir is not None
        root = self.dir
        tmp = root / SNAPSHOT_TMP_NAME
        try:
            try:
                if captured.head.version == SNAPSHOT_VERSION:
                    frames = snapshot_frames(captured)
                else:
                    frames = snapshot_frames_v2(captured)
                journal.write_file(tmp, frames)
            finally:
                captured.release()
            os.replace(tmp, root / SNAPSHOT_NAME)
            journal.fsync_dir(root)
            old = root / OLD_LOG_NAME
            if old.exists():
                old.unlink()
                journal.fsync_dir(root)
        except Exception as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            self._compact_after = self._end + max(self.snapshot_bytes // 4, 1)
            if raise_errors:
                raise
            logger.error(
                "compaction in %s failed (%s); the log keeps every write, next attempt past %d "
                "bytes",
                root,
                getattr(exc, "strerror", None) or repr(exc),
                self._compact_after,
            )
        else:
            self._compact_after = 0
