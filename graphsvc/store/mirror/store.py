"""The embedded store's :class:`~graphsvc.store.base.Store` interface, answered by its parts: the
state (:class:`~graphsvc.store.mirror.state.MirrorState`), the log writer
(:class:`~graphsvc.store.mirror.writer.LogWriter`), the loader that opens and closes the data
directory (:class:`~graphsvc.store.mirror.loader.MirrorLoader`), and one part per capability
(writes, erase, vectors, candidate reads, reads), all under the store's one lock."""

from __future__ import annotations

import threading
from pathlib import Path

from graphsvc.embedding.search import SearchPool
from graphsvc.store.base import Store, delegate
from graphsvc.store.journal import SNAPSHOT_VERSION
from graphsvc.store.mirror.candidates import MirrorCandidates
from graphsvc.store.mirror.erase import MirrorErase
from graphsvc.store.mirror.loader import MirrorLoader
from graphsvc.store.mirror.reads import MirrorReads
from graphsvc.store.mirror.state import MirrorState
from graphsvc.store.mirror.vector_store import MirrorVectors
from graphsvc.store.mirror.writer import LogWriter
from graphsvc.store.mirror.writes import MirrorWrites


class MirrorStore(Store):
    """The embedded store, persisted under ``data_dir``.

    Args:
        data_dir: folder for ``log.jsonl``, ``snapshot.json`` and ``LOCK`` (created on open).
            ``None`` keeps everything in memory only (nothing persists).
        fsync: fsync the log on every write (turn off only for throwaway data).
        snapshot_bytes: compact the log into a snapshot past this size (in the background).
        read_only: take no lock, change no file, and refuse writes.
        search_threads: threads a search by meaning splits a large namespace's vectors over.
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
        lock = threading.RLock()
        self._state = MirrorState()
        self._log = LogWriter(
            self._state,
            lock,
            data_dir,
            fsync=fsync,
            snapshot_bytes=snapshot_bytes,
            read_only=read_only,
        )
        self._loader = MirrorLoader(self._state, self._log, data_dir, read_only=read_only)
        self._search = SearchPool(search_threads)  # close() stops its threads
        self._writes = MirrorWrites(self._state, self._log)
        self._erase = MirrorErase(self._state, self._log)
        self._vectors = MirrorVectors(self._state, self._log)
        self._candidates = MirrorCandidates(self._state, lock, self._search)
        self._reads = MirrorReads(self._state, lock)

    # -- lifecycle and persistence: the loader and the log writer --------------------------------

    open = delegate("_loader", MirrorLoader.open)
    ping = delegate("_loader", MirrorLoader.ping)
    load_snapshot = delegate("_loader", MirrorLoader.load_snapshot)
    replay = delegate("_loader", MirrorLoader.replay)
    wait_for_compaction = delegate("_log", LogWriter.wait_for_compaction)

    def close(self) -> None:
        try:
            self._loader.close()
        finally:
            self._search.close()

    def snapshot(self, *, version: int = SNAPSHOT_VERSION) -> None:
        """As :meth:`LogWriter.snapshot` (compact now and wait; ``version`` 2 for tests)."""
        self._log.snapshot(version=version)

    @property
    def compacting(self) -> bool:
        """Whether a background compaction is running."""
        return self._log.compacting

    @property
    def seq(self) -> int:
        """The ``seq`` of the last record applied (loaded from the snapshot, replayed or written);
        0 before any."""
        return self._log.seq

    # -- writes ----------------------------------------------------------------------------------

    upsert_memories = delegate("_writes", MirrorWrites.upsert_memories)
    add_links = delegate("_writes", MirrorWrites.add_links)
    forget = delegate("_writes", MirrorWrites.forget)
    save_belief = delegate("_writes", MirrorWrites.save_belief)
    append_event = delegate("_writes", MirrorWrites.append_event)
    set_reported_tokens = delegate("_writes", MirrorWrites.set_reported_tokens)
    erase = delegate("_erase", MirrorErase.erase)

    # -- vectors and the vector queue ------------------------------------------------------------

    vector_model = delegate("_vectors", MirrorVectors.vector_model)
    set_vector_model = delegate("_vectors", MirrorVectors.set_vector_model)
    clear_vectors = delegate("_vectors", MirrorVectors.clear_vectors)
    set_vectors = delegate("_vectors", MirrorVectors.set_vectors)
    vector_count = delegate("_vectors", MirrorVectors.vector_count)
    pending_vectors = delegate("_vectors", MirrorVectors.pending_vectors)
    fill_vectors = delegate("_vectors", MirrorVectors.fill_vectors)
    vector_backlogs = delegate("_vectors", MirrorVectors.vector_backlogs)
    take_vector_queue = delegate("_vectors", MirrorVectors.take_vector_queue)
    release_vector_queue = delegate("_vectors", MirrorVectors.release_vector_queue)
    vector_queue_lease = delegate("_vectors", MirrorVectors.vector_queue_lease)

    # -- candidate reads (recall_candidates and recall_window are the interface's own) ------------

    candidates = delegate("_candidates", MirrorCandidates.candidates)
    recent_candidates = delegate("_candidates", MirrorCandidates.recent_candidates)
    recall_columns = delegate("_candidates", MirrorCandidates.recall_columns)
    similar = delegate("_candidates", MirrorCandidates.similar)

    # -- reads -----------------------------------------------------------------------------------

    get_memories = delegate("_reads", MirrorReads.get_memories)
    term_stats = delegate("_reads", MirrorReads.term_stats)
    visible = delegate("_reads", MirrorReads.visible)
    successors = delegate("_reads", MirrorReads.successors)
    supersession_chain = delegate("_reads", MirrorReads.supersession_chain)
    supersessions = delegate("_reads", MirrorReads.supersessions)
    walk = delegate("_reads", MirrorReads.walk)
    next_recorded = delegate("_reads", MirrorReads.next_recorded)
    links_of = delegate("_reads", MirrorReads.links_of)
    get_belief = delegate("_reads", MirrorReads.get_belief)
    events = delegate("_reads", MirrorReads.events)
    stats = delegate("_reads", MirrorReads.stats)
    facet_counts = delegate("_reads", MirrorReads.facet_counts)
    list_memories = delegate("_reads", MirrorReads.list_memories)
    namespaces = delegate("_reads", MirrorReads.namespaces)
    export = delegate("_reads", MirrorReads.export)
