"""The embedded store's candidate reads: the memories holding a query's terms (or the newest
ones holding one), as candidate objects or as columns, and the nearest by meaning."""

from __future__ import annotations

import heapq
import threading
from collections.abc import Sequence
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.embedding.codes import with_given
from graphsvc.embedding.search import SearchPool
from graphsvc.model import (
    AsOf,
)
from graphsvc.store.candidates import Candidate, CandidateColumns, TermStats, plan_candidates
from graphsvc.store.mirror.state import MirrorNamespace, MirrorState
from graphsvc.store.mirror.table import NO_TIME
from graphsvc.store.vectors import wrong_length


class MirrorCandidates:
    """The reads that gather recall's candidates, by words and by meaning: a part of
    :class:`~graphsvc.store.mirror.MirrorStore`, under its lock."""

    def __init__(self, state: MirrorState, lock: threading.RLock, search: SearchPool) -> None:
        self._state = state
        self._lock = lock
        # Threads a search by meaning splits a large namespace's vectors over.
        self._search = search

    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._state.space(namespace)
            parts = [
                np.frombuffer(posting.rows, dtype=np.int32)
                for posting in (space.postings.get(term) for term in terms)
                if posting is not None and len(posting)
            ]
            if not parts:
                return []
            rows: list[int] = np.unique(np.concatenate(parts)).tolist()
            del parts  # release the postings' buffers before anything can grow them
            rows.sort(key=space.memories.keys.__getitem__)
            return self._candidates(space, rows, score_terms)

    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._state.space(namespace)
            posting = space.postings.get(term)
            if posting is None:
                return []
            table = space.memories
            recorded, keys = table.recorded, table.keys
            newest = heapq.nsmallest(limit, posting.rows, key=lambda r: (-recorded[r], keys[r]))
            return self._candidates(space, newest, score_terms)

    def recall_columns(
        self, namespace: str, terms: Sequence[str], limit: int, as_of: AsOf | None = None
    ) -> tuple[TermStats, CandidateColumns]:
        """As :meth:`Store.recall_columns`, read straight from the columns and postings under one
        hold of the lock: the candidates' rows in ascending order, no object per candidate
        (``as_of``: the rows visible then, filtered on the columns before anything is built)."""
        with self._lock:
            space = self._state.space(namespace)
            postings = space.postings
            df = {t: len(postings[t]) if t in postings else 0 for t in terms}
            stats = TermStats(len(space.memories), space.total_length, df)
            plan = plan_candidates(terms, stats, limit)
            if plan.fallback_term is not None:
                rows = self._newest_rows(space, plan.fallback_term, plan.fallback_limit, as_of)
            else:
                rows = self._rows_with(space, plan.terms)
                if as_of is not None:
                    rows = space.visible_rows(rows, as_of)
            return stats, self._columns(space, rows, terms)

    def similar(
        self, namespace: str, query: bytes, k: int, ids: Sequence[UUID]
    ) -> list[tuple[UUID, float]]:
        """As :meth:`Store.similar`, exactly: the table's :meth:`VectorTable.nearest` (a full
        scan's answer, reading only what can reach the ``k`` best once the table is sketched) and
        the cosines of ``ids``."""
        with self._lock:
            space = self._state.spaces.get(namespace)
            model = None if space is None else space.model
            if space is None or model is None:
                return []
            if len(query) != model.dimension:
                raise wrong_length("the query vector", len(query), namespace, model)
            table = space.vectors
            if table is None:
                return []
            codes = np.frombuffer(query, dtype=np.int8)
            nearest = table.nearest(codes, k, self._search)
            known = dict(nearest)
            asked = table.cosines_of(codes, [mid.int for mid in ids if mid not in known])
            given = [(UUID(int=key), score) for key, score in asked.items()]
        return with_given(nearest, given, k)

    @staticmethod
    def _candidates(
        space: MirrorNamespace, rows: Sequence[int], score_terms: Sequence[str]
    ) -> list[Candidate]:
        """The candidates of ``rows`` (in that order)."""
        table = space.memories
        wanted = np.asarray(rows, dtype=np.int64)
        columns = []
        for term in score_terms:
            posting = space.postings.get(term)
            if posting is None:
                columns.append([0] * len(rows))
            else:
                columns.append(posting.tf_of(wanted).tolist())
        tfs = list(zip(*columns, strict=True)) if columns else [()] * len(rows)
        ids, lengths, recorded = table.ids, table.lengths, table.recorded
        occurred, confidence = table.occurred, table.confidence
        found = []
        for row, tf in zip(rows, tfs, strict=True):
            occ = occurred[row]
            found.append(
                Candidate(
                    ids[row],  # type: ignore[arg-type]
                    tf,
                    lengths[row],
                    recorded[row],
                    None if occ == NO_TIME else occ,
                    confidence[row],
                )
            )
        return found

    @staticmethod
    def _rows_with(space: MirrorNamespace, terms: Sequence[str]) -> NDArray[np.int64]:
        """The rows holding one of ``terms``, ascending (the postings' buffers are released
        before this returns: nothing may grow them while a view is held)."""
        parts = [
            np.frombuffer(posting.rows, dtype=np.int32)
            for posting in (space.postings.get(term) for term in terms)
            if posting is not None and len(posting)
        ]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(parts)).astype(np.int64)

    @staticmethod
    def _newest_rows(
        space: MirrorNamespace, term: str, limit: int, as_of: AsOf | None = None
    ) -> NDArray[np.int64]:
        """The ``limit`` newest rows holding ``term`` (``recordedAt`` descending, then id), as
        :meth:`recent_candidates` picks them; only the rows recorded no earlier than the
        limit-th newest are ordered in Python (``as_of``: of the rows visible then)."""
        posting = space.postings.get(term)
        if posting is None:
            return np.zeros(0, dtype=np.int64)
        table = space.memories
        rows = np.frombuffer(posting.rows, dtype=np.int32).astype(np.int64)
        if as_of is not None:
            rows = space.visible_rows(rows, as_of)
        if len(rows) > limit > 0:
            recorded = np.frombuffer(table.recorded, dtype=np.int64)[rows]
            kth = np.partition(recorded, len(rows) - limit)[len(rows) - limit]
            rows = rows[recorded >= kth]
            del recorded
        at, keys = table.recorded, table.keys
        newest = heapq.nsmallest(limit, rows.tolist(), key=lambda r: (-at[r], keys[r]))
        return np.asarray(newest, dtype=np.int64)

    @staticmethod
    def _columns(
        space: MirrorNamespace, rows: NDArray[np.int64], terms: Sequence[str]
    ) -> CandidateColumns:
        """The candidate columns of ``rows`` (copies: no view of a growing array escapes)."""
        table = space.memories
        tf = np.zeros((len(rows), len(terms)), dtype=np.int64)
        if len(rows):
            for j, term in enumerate(terms):
                posting = space.postings.get(term)
                if posting is not None:
                    tf[:, j] = posting.tf_of(rows)
        recorded = np.frombuffer(table.recorded, dtype=np.int64)[rows]
        occurred = np.frombuffer(table.occurred, dtype=np.int64)[rows]
        known = occurred != NO_TIME
        return CandidateColumns(
            ids=list(map(table.ids.__getitem__, rows.tolist())),  # type: ignore[arg-type]
            tf=tf,
            length=np.frombuffer(table.lengths, dtype=np.int32)[rows].astype(np.int64),
            recorded_us=recorded,
            occurred_us=occurred,
            occurred=known,
            when_us=np.where(known, occurred, recorded),
            confidence=np.frombuffer(table.confidence, dtype=np.float64)[rows],
        )
