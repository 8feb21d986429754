"""The embedded store's :class:`~graphsvc.store.base.Store` interface, answered by its parts: the
state (:class:`~graphsvc.store.mirror.state.MirrorState`), the log writer
(:class:`~graphsvc.store.mirror.writer.LogWriter`), the loader that opens and closes the data
directory (:class:`~graphsvc.store.mirror.loader.MirrorLoader`), and one part per capability
(writes, erase, vectors, candidate reads, reads), all under the store's one lock."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from graphsvc.embedding.search import SearchPool
from graphsvc.store.base import Store
from graphsvc.store.journal import SNAPSHOT_VERSION
from graphsvc.store.mirror.candidates import MirrorCandidates
from graphsvc.store.mirror.erase import MirrorErase
from graphsvc.store.mirror.loader import MirrorLoader
from graphsvc.store.mirror.reads import MirrorReads
from graphsvc.store.mirror.state import MirrorState
from graphsvc.store.mirror.vector_store import MirrorVectors
from graphsvc.store.mirror.writer import LogWriter
from graphsvc.store.mirror.writes import MirrorWrites

P = ParamSpec("P")
R = TypeVar("R")


def answered_by(
    part: str, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Any, P], R]:
    """A method of the store that calls ``method`` of the part held in the attribute ``part``:
    it has the method's signature (which mypy checks against the interface it implements), name
    and docstring, and ``__wrapped__`` names where the work is done."""

    def forward(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, part), *args, **kwargs)

    functools.update_wrapper(forward, method)
    return forward


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

    open = answered_by("_loader", MirrorLoader.open)
    ping = answered_by("_loader", MirrorLoader.ping)
    load_snapshot = answered_by("_loader", MirrorLoader.load_snapshot)
    replay = answered_by("_loader", MirrorLoader.replay)
    wait_for_compaction = answered_by("_log", LogWriter.wait_for_compaction)

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

    upsert_memories = answered_by("_writes", MirrorWrites.upsert_memories)
    add_links = answered_by("_writes", MirrorWrites.add_links)
    forget = answered_by("_writes", MirrorWrites.forget)
    save_belief = answered_by("_writes", MirrorWrites.save_belief)
    append_event = answered_by("_writes", MirrorWrites.append_event)
    set_reported_tokens = answered_by("_writes", MirrorWrites.set_reported_tokens)
    erase = answered_by("_erase", MirrorErase.erase)

    # -- vectors and the vector queue ------------------------------------------------------------

    vector_model = answered_by("_vectors", MirrorVectors.vector_model)
    set_vector_model = answered_by("_vectors", MirrorVectors.set_vector_model)
    clear_vectors = answered_by("_vectors", MirrorVectors.clear_vectors)
    set_vectors = answered_by("_vectors", MirrorVectors.set_vectors)
    vector_count = answered_by("_vectors", MirrorVectors.vector_count)
    pending_vectors = answered_by("_vectors", MirrorVectors.pending_vectors)
    fill_vectors = answered_by("_vectors", MirrorVectors.fill_vectors)
    vector_backlogs = answered_by("_vectors", MirrorVectors.vector_backlogs)
    take_vector_queue = answered_by("_vectors", MirrorVectors.take_vector_queue)
    release_vector_queue = answered_by("_vectors", MirrorVectors.release_vector_queue)
    vector_queue_lease = answered_by("_vectors", MirrorVectors.vector_queue_lease)

    # -- candidate reads (recall_candidates and recall_window are the interface's own) ------------

    candidates = answered_by("_candidates", MirrorCandidates.candidates)
    recent_candidates = answered_by("_candidates", MirrorCandidates.recent_candidates)
    recall_columns = answered_by("_candidates", MirrorCandidates.recall_columns)
    similar = answered_by("_candidates", MirrorCandidates.similar)

    # -- reads -----------------------------------------------------------------------------------

    get_memories = answered_by("_reads", MirrorReads.get_memories)
    term_stats = answered_by("_reads", MirrorReads.term_stats)
    visible = answered_by("_reads", MirrorReads.visible)
    successors = answered_by("_reads", MirrorReads.successors)
    supersession_chain = answered_by("_reads", MirrorReads.supersession_chain)
    supersessions = answered_by("_reads", MirrorReads.supersessions)
    walk = answered_by("_reads", MirrorReads.walk)
    next_recorded = answered_by("_reads", MirrorReads.next_recorded)
    links_of = answered_by("_reads", MirrorReads.links_of)
    get_belief = answered_by("_reads", MirrorReads.get_belief)
    events = answered_by("_reads", MirrorReads.events)
    stats = answered_by("_reads", MirrorReads.stats)
    facet_counts = answered_by("_reads", MirrorReads.facet_counts)
    list_memories = answered_by("_reads", MirrorReads.list_memories)
    namespaces = answered_by("_reads", MirrorReads.namespaces)
    export = answered_by("_reads", MirrorReads.export)
