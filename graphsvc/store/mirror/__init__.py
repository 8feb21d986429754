"""The mirror: the embedded store. Memories held column-wise, links in adjacency lists, an
inverted index of integer arrays with exact term statistics kept up to date on every write and
delete (:mod:`~graphsvc.store.mirror.table`: a few hundred bytes per memory beside its text), and
a log that can be trusted.

Persistence (the file format is :mod:`graphsvc.store.journal`):

- Every acknowledged write is one checksummed frame appended to ``log.jsonl`` and fsynced before
  the call returns, with ``seq`` one more than the write before.
- A write that fails (a full disk, an I/O error) is rolled back: the file is cut back to the last
  acknowledged record before anything else is written, and the call raises
  :class:`StoreUnavailableError` saying nothing was written. The store stays usable.
- Past ``snapshot_bytes`` of log, a compaction starts: under the store's lock the log is switched
  to a new segment and the state is captured as copies of its containers (the items are
  immutable; copying the columns is a few memory copies, tens of milliseconds for a million
  memories); a background thread then writes ``snapshot.json`` from that capture (version 3:
  memories, postings and links as binary columns, :mod:`~graphsvc.store.mirror.columns`) while
  reads and writes go on, renames it into place and deletes the retired segment. Version-2
  snapshots (JSON rows) still load.
  A crash at any point leaves files that open to the same state (old snapshot + retired segment +
  new segment, replayed by ``seq``).
- On open, the snapshot is loaded and the segments replayed; a torn last record (a write that
  was never acknowledged) is cut with a WARNING saying what was cut; damage (a record whose
  checksum fails, anything after it, a gap in ``seq``) refuses to open with
  :class:`StoreCorruptError` naming ``file:line`` and how to recover (``graphsvc repair``, see
  :mod:`graphsvc.store.repair`). A missing or foreign log is refused the same way.
- Version-1 data directories (bare JSON lines, no checksums) still load; a writer migrates them
  at open: it takes a snapshot at once, which rewrites the state in the new format.

Vectors (dense recall, :mod:`graphsvc.embedding.codes`) are part of the log like any write: an
upsert's vectors travel in the record of its memories (one atomic write), and ``vectorModel``,
``vectors`` (set) and ``clearVectors`` are records of their own; the snapshot holds each namespace's
model and its vectors compactly (per chunk, the ids as 16 bytes and the int8 codes, base64). Data
written before vectors existed loads with none. In memory, a namespace's vectors are one float32
matrix (:mod:`~graphsvc.store.mirror.vectors`), so that ``similar`` is one matrix-vector product.

One process writes a data directory at a time (an exclusive ``flock`` on ``LOCK``); read-only opens
take no lock, change no file, and see the state as of their open.

The package, by what each module holds: :mod:`~graphsvc.store.mirror.table` (memory columns and
postings), :mod:`~graphsvc.store.mirror.links` (the link graph),
:mod:`~graphsvc.store.mirror.columns` (the snapshot's binary columns),
:mod:`~graphsvc.store.mirror.vectors` (a namespace's vectors as a search matrix),
:mod:`~graphsvc.store.mirror.rows` (the log's compact JSON forms) and
:mod:`~graphsvc.store.mirror.state` (the namespaces and their changes, no I/O). The store
(:class:`MirrorStore`, :mod:`~graphsvc.store.mirror.store`) holds its parts and answers each
method of the interface with one of them, all under its one lock:
:mod:`~graphsvc.store.mirror.writer` (the log: appends, rollback, compaction, with
:mod:`~graphsvc.store.mirror.snapshot`, what a compaction writes),
:mod:`~graphsvc.store.mirror.loader` (open, replay, close), :mod:`~graphsvc.store.mirror.writes`,
:mod:`~graphsvc.store.mirror.erase`, :mod:`~graphsvc.store.mirror.vector_store` (the vector model,
vector writes and the vector queue), :mod:`~graphsvc.store.mirror.candidates` (recall's candidate
reads) and :mod:`~graphsvc.store.mirror.reads`.
"""

from graphsvc.store.mirror.loader import Replayed, lock_data_dir, lock_used, repair_hint
from graphsvc.store.mirror.store import MirrorStore
from graphsvc.store.mirror.writer import FORMAT_VERSION

__all__ = [
    "FORMAT_VERSION",
    "MirrorStore",
    "Replayed",
    "lock_data_dir",
    "lock_used",
    "repair_hint",
]
