"""The embedded store's log writer: every write is one frame appended and made durable before the
call returns, a failed append is rolled back, and past ``snapshot_bytes`` of log a compaction
switches to a new segment and writes the snapshot in the background. The file format is
:mod:`graphsvc.store.journal`; :mod:`graphsvc.store.mirror` tells the whole story."""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from graphsvc.dense import VectorModel
from graphsvc.errors import StoreUnavailableError
from graphsvc.model import Belief, ContextEvent
from graphsvc.store import journal
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
from graphsvc.store.mirror import columns
from graphsvc.store.mirror.links import LinkTuple, link_row
from graphsvc.store.mirror.rows import log_belief_row, log_event_row, log_model_row
from graphsvc.store.mirror.state import MirrorState
from graphsvc.store.mirror.table import MemoryTable
from graphsvc.store.mirror.vectors import VectorShare

logger = logging.getLogger("graphsvc.store")

FORMAT_VERSION = journal.FORMAT_VERSION
#: Rows per snapshot frame: small frames keep the compaction thread's turns at the GIL short.
SNAPSHOT_CHUNK = 1000


@dataclass(frozen=True)
class _Capture:
    """The state at one ``seq``: copies of the containers (every item in them is immutable, and
    the memory columns that only grow are shared): what a compaction writes while the store goes
    on."""

    head: SnapshotHead
    # (namespace, memories, links, beliefs, events by run)
    spaces: list[
        tuple[str, MemoryTable, list[LinkTuple], list[Belief], dict[str, list[ContextEvent]]]
    ]
    # (namespace, vector model, vectors): every namespace with a model or a vector
    vectors: list[tuple[str, VectorModel | None, VectorShare | None]]

    def release(self) -> None:
        """The snapshot is written (or abandoned): the vector tables may change rows in place."""
        for _, _, share in self.vectors:
            if share is not None:
                share.table.release(share)


def _chunks(items: Sequence[Any], size: int = SNAPSHOT_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class MirrorWriter(MirrorState):
    """Appending records to the log durably, rolling back an append that failed, and compaction.
    A layer of :class:`~graphsvc.store.mirror.MirrorStore` (whose constructor sets the
    attributes)."""

    _dir: Path | None
    _fsync: bool
    _snapshot_bytes: int
    _read_only: bool
    _lock: threading.RLock
    _seq: int
    _gen: int
    _log_fd: int | None
    _log_end: int
    _log_head: LogHead | None
    _store_id: str | None
    _broken: str | None
    _broken_offset: int | None
    _compactor: threading.Thread | None
    _compact_after: int
    _open: bool

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

    @property
    def seq(self) -> int:
        """The ``seq`` of the last record applied (loaded from the snapshot, replayed or written);
        0 before any."""
        return self._seq

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
            self._append(journal.encode_parts(record))
        if apply is None:
            self._apply(record)
        else:
            apply()
        self._seq = record["seq"]
        if self._log_fd is not None and self._log_end > max(
            self._snapshot_bytes, self._compact_after
        ):
            self._start_compaction()

    def _append(self, frame: Sequence[bytes]) -> None:
        """Append a frame (in parts, :func:`~graphsvc.store.journal.encode_parts`) at the end of
        the acknowledged log, durably; on failure, cut the file back so that nothing of it
        stays.

        Raises:
            StoreUnavailableError: the frame could not be written (nothing of it stays, or, if
                even the cut failed, writes are refused until it succeeds).
        """
        fd = self._log_fd
        assert fd is not None
        start = self._log_end
        try:
            journal.write_all_parts(fd, frame)
            if self._fsync:
                os.fdatasync(fd)
        except OSError as exc:
            self._roll_back(start, exc)
        self._log_end = start + sum(map(len, frame))

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
        with self._lock:
            if self._dir is None or self._log_fd is None:
                return
            self.wait_for_compaction()
            try:
                self._compact(rotate=True, background=False, raise_errors=True, version=version)
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
                self._dir,
                exc.strerror,
                self._compact_after,
            )

    def _compact(
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
        assert self._dir is not None
        if rotate and not (self._dir / OLD_LOG_NAME).exists():
            self._rotate()
        capture = self._capture(version)
        if background:
            thread = threading.Thread(
                target=self._write_snapshot,
                args=(capture, False),
                name="graphsvc-compaction",
                daemon=True,
            )
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
        head = LogHead(
            journal.new_log_id(),
            gen=self._gen + 1,
            base=self._seq,
            prev=prev,
            store=self._store_id,
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
                self._broken = f"a log switch in {root} failed half-way ({exc.strerror})"
                self._broken_offset = None
            raise
        if self._log_fd is not None:
            os.close(self._log_fd)
        self._log_fd = fd
        self._log_end = len(frame)
        self._log_head = head
        self._gen = head.gen

    def _capture(self, version: int = SNAPSHOT_VERSION) -> _Capture:
        """The state now: shallow copies of the containers (lock held)."""
        assert self._log_head is not None
        head = SnapshotHead(
            version, gen=self._gen, seq=self._seq, log=self._log_head.log, store=self._store_id
        )
        spaces = [
            (
                ns,
                space.memories.copy(),
                list(space.graph.links()),
                list(space.beliefs.values()),
                {run: list(events) for run, events in space.events.items()},
            )
            for ns, space in self._spaces.items()
        ]
        vectors = [
            (ns, space.model, None if space.vectors is None else space.vectors.share())
            for ns, space in self._spaces.items()
            if space.model is not None or space.vectors is not None
        ]
        return _Capture(head, spaces, vectors)

    @staticmethod
    def _snapshot_frames(capture: _Capture) -> Iterator[bytes]:
        """The snapshot's frames (version 3: memories, postings and links as binary columns,
        :mod:`~graphsvc.store.mirror.columns`). Each frame is serialised on its own and its
        objects freed at once, so that writing a snapshot leaves no garbage for a full collection
        of the cyclic garbage collector (which would stop every thread, readers included)."""

        def body() -> Iterator[bytes]:
            for ns, memories, links, beliefs, events in capture.spaces:
                for record in columns.table_records(ns, memories):
                    yield journal.encode(record)
                for record in columns.link_records(ns, links):
                    yield journal.encode(record)
                yield from MirrorWriter._row_frames(ns, [], beliefs, events)

        return MirrorWriter._counted(capture.head.record(), body(), capture)

    @staticmethod
    def _snapshot_frames_v2(capture: _Capture) -> Iterator[bytes]:
        """The frames of a version-2 snapshot (memories and links as JSON rows): what graphsvc
        wrote before version 3, kept so that tests can build such a directory."""
        head = capture.head

        def body() -> Iterator[bytes]:
            for ns, memories, links, beliefs, events in capture.spaces:
                rows = [memories.row_form(row) for row in memories.rows()]
                yield from MirrorWriter._row_frames(ns, rows, beliefs, events, links)

        record = SnapshotHead(FORMAT_VERSION, head.gen, head.seq, head.log, head.store).record()
        return MirrorWriter._counted(record, body(), capture)

    @staticmethod
    def _counted(head: dict[str, Any], body: Iterator[bytes], capture: _Capture) -> Iterator[bytes]:
        """A snapshot's frames: its head, ``body``, the vectors' frames, and the end frame that
        counts them all."""
        yield journal.encode(head)
        count = 1
        for frame in body:
            yield frame
            count += 1
        for frame in MirrorWriter._vector_frames(capture):
            yield frame
            count += 1
        yield journal.encode({"op": "end", "frames": count + 1})

    @staticmethod
    def _row_frames(
        ns: str,
        memory_rows: Sequence[list[Any]],
        beliefs: Sequence[Belief],
        events: dict[str, list[ContextEvent]],
        links: Sequence[LinkTuple] = (),
    ) -> Iterator[bytes]:
        """Frames of JSON rows: memories and links (version 2 only), beliefs and events."""
        dumps = orjson.dumps
        parts: list[tuple[bytes, Sequence[Any], Callable[[Any], Any]]] = [
            (b'"op":"memories","ns":%b' % dumps(ns), memory_rows, list),
            (b'"op":"links","ns":%b' % dumps(ns), links, link_row),
            (b'"op":"beliefs","ns":%b' % dumps(ns), beliefs, log_belief_row),
        ]
        parts += [
            (b'"op":"events","ns":%b,"run":%b' % (dumps(ns), dumps(run)), rows, log_event_row)
            for run, rows in events.items()
        ]
        for head, items, row in parts:
            for chunk in _chunks(items):
                rows = b",".join([dumps(row(item)) for item in chunk])
                yield journal.encode_payload(b'{%b,"rows":[%b]}' % (head, rows))

    @staticmethod
    def _vector_frames(capture: _Capture) -> Iterator[bytes]:
        """Frames of each namespace's vector model and vectors."""
        for ns, model, share in capture.vectors:
            if model is not None:
                yield journal.encode({"op": "vectorModel", "ns": ns, "model": log_model_row(model)})
            if share is None:
                continue
            # Compact and fast to load: per chunk of rows, the ids as 16 bytes each and the int8
            # codes, both concatenated and base64-encoded.
            for start in range(0, len(share.ids), SNAPSHOT_CHUNK):
                stop = min(start + SNAPSHOT_CHUNK, len(share.ids))
                ids = b"".join([mid.bytes for mid in share.ids[start:stop]])
                yield journal.encode(
                    {
                        "op": "vectors",
                        "ns": ns,
                        "dimension": share.matrix.shape[1],
                        "total": len(share.ids),
                        "ids": base64.b64encode(ids).decode("ascii"),
                        "codes": base64.b64encode(share.codes(start, stop)).decode("ascii"),
                    }
                )

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
            try:
                if capture.head.version == SNAPSHOT_VERSION:
                    frames = self._snapshot_frames(capture)
                else:
                    frames = self._snapshot_frames_v2(capture)
                journal.write_file(tmp, frames)
            finally:
                capture.release()
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
                root,
                getattr(exc, "strerror", None) or repr(exc),
                self._compact_after,
            )
        else:
            self._compact_after = 0
