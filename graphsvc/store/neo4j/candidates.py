"""The Neo4j store's candidate reads (:class:`~graphsvc.store.base.CandidateReads`): what recall
reads first, lexically and by meaning.

Lexical. A query's term statistics and candidates take one round trip
(``recall_columns.cypher``): candidates come from the ``memory_terms`` full-text index, their term
frequencies are counted in Cypher, and the best ``guess.size`` of them by the ranking's own score
are read ahead with them, so the ranked window is usually read without a round trip of its own.

By meaning. ``similar`` asks in one round trip for the model, the count, the candidates and the
vectors of the given ids (``cypher/similar.cypher``). A namespace of more than :data:`EXACT_BELOW`
vectors gets its candidates from the dimension's HNSW index (approximate, and shared by every
namespace of the dimension, so filtered by namespace), asked for :data:`OVERFETCH` times ``k``
neighbours (Neo4j searches with ``ef`` equal to that count); a smaller one is ranked whole in Cypher
by Neo4j's float cosine. Only candidates that can reach the ``k`` best come back with their codes
(Neo4j's cosine is within :data:`SLACK` of the exact one), and they are re-scored exactly
(:func:`graphsvc.embedding.codes.cosines`), the ``k`` best taken by
:func:`graphsvc.embedding.codes.top_k`: the embedded store's answer whenever the candidates hold the
exact ``k`` best. :func:`next_ask` checks that they do, or asks again: the index for more (a crowded
index, ties at the boundary), then a scan; a scan with a floor fetches everything that can reach the
``k``-th, which is exact by construction. What is left approximate is the index's own recall, as far
as a neighbour HNSW missed can still hide above the lowest row it returned. That is not rare at
scale: on ``graphsvc bench --embed synthetic``'s 100,000 vectors (Neo4j 5.26, M 16, ef_construction
100), the index did not return a stored vector among the 5 nearest of itself for 134 of 200 sampled
memories (33 of 200 at 100), and this search gives the exact top 10 for 71 of the bench's 100
queries (its word-hash vectors are a hard case: on MiniLM vectors of real text, every BEAM turn, it
gave it for all 400 BEAM questions). A namespace of at most :data:`EXACT_BELOW` vectors is exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np

from graphsvc.embedding.codes import VectorModel, cosines, top_k, with_given
from graphsvc.errors import StoreCorruptError
from graphsvc.model import AsOf
from graphsvc.store.base import CandidateReads
from graphsvc.store.candidates import (
    Candidate,
    CandidateColumns,
    ReadAhead,
    Recalled,
    TermStats,
    WindowGuess,
)
from graphsvc.store.neo4j.boundary import Neo4jBoundary
from graphsvc.store.neo4j.rows import (
    KEY_SEP,
    NO_OCCURRED,
    as_of_param,
    candidates_from_rows,
    columns_from_row,
    lucene_query,
    namespaced_key,
)
from graphsvc.store.neo4j.vectors import vector_index, vector_model_from_row, vector_property
from graphsvc.store.vectors import wrong_length

# Terms per full-text query: Lucene refuses more than 1024 clauses, and some versions return
# nothing for very long queries; chunks stay well below both.
TERMS_PER_QUERY = 100
#: Namespaces with at most this many vectors are scanned exactly in Cypher instead of asking the
#: (approximate, shared) vector index.
EXACT_BELOW = 2_000
#: The index is first asked for ``OVERFETCH * k`` neighbours (at least :data:`MIN_FETCH`); Neo4j
#: searches its HNSW graph with ``ef`` equal to that count.
OVERFETCH = 40
MIN_FETCH = 100
#: How much more the index is asked for when its answer is not enough (at least).
GROW = 8
#: The most neighbours one index query asks for; past it the namespace is scanned.
MAX_FETCH = 10_000
#: How much Neo4j's float32 cosine of integer codes may differ from the exact one (cosine
#: units; measured: at most about 1e-7, in the scan and in the index).
SLACK = 1e-4
#: How many times the index is asked again (for more) before the namespace is scanned.
INDEX_RETRIES = 3
#: A scan with a floor keeps every vector above it (LIMIT needs a number).
NO_LIMIT = 2**62


@dataclass(frozen=True, slots=True)
class _Recalled:
    """What recall_columns.cypher says beside the columns: whether the plan fell back to the
    newest memories of its rarest term, the namespace's vector model, and its vector count."""

    fallback: bool
    model: VectorModel | None
    ahead: ReadAhead | None = None
    vectors: int = 0


class RowsAhead(ReadAhead):
    """The memories recall_columns.cypher read ahead of the window, as window.cypher's rows,
    by id."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = {row["id"]: row for row in rows}


def _guess_params(guess: WindowGuess | None, asked: Sequence[str], terms: Sequence[str]) -> Any:
    """recall_columns.cypher's ``$guess``: size 0 reads nothing ahead."""
    if guess is None or guess.size <= 0:
        return {"size": 0}
    count = Counter(terms)
    return {
        "size": guess.size,
        "dayUs": guess.day_us,
        "mult": [count[term] for term in asked],
        "k1": guess.k1,
        "b": guess.bm25_b,
        "coverageB": guess.coverage_b,
        "coverage": guess.coverage,
        "bm25": guess.bm25,
        "freshness": guess.freshness,
        "confidence": guess.confidence,
        "keep": 1.0 - guess.freshness - guess.confidence,
        "halfLife": guess.half_life_days,
    }


def _cosine(score: float) -> float:
    """A Neo4j similarity score, ``(1 + cosine) / 2``, as a cosine."""
    return 2.0 * score - 1.0


@dataclass(frozen=True)
class Ask:
    """One ``similar`` round trip: ``mode`` (``index`` or ``scan``; ``auto`` lets the query
    choose), how many rows it fetches, a scan's floor (a Neo4j score), and how many times the
    index has been asked so far."""

    mode: str
    fetch: int
    floor: float | None = None
    attempts: int = 0


@dataclass(frozen=True)
class Answer:
    """What a round trip said about its candidates: what ran, the rows it returned (the index's:
    every namespace of the dimension), how many were the namespace's, the lowest cosine among
    them (Neo4j's float one), and how many vectors the namespace holds."""

    mode: str
    returned: int
    mine: int
    least: float | None
    vectors: int


def next_ask(
    ask: Ask, answer: Answer, *, k: int, kth: float | None, zero: bool, first: int
) -> Ask | None:
    """What to ask next, or None when the candidates hold the exact ``k`` best.

    ``kth`` is the ``k``-th best exact cosine among every vector fetched so far (None: fewer
    than ``k``). A row the answer left out scores at most ``least + SLACK``: below ``kth`` it
    cannot be among the ``k`` best, ties included (for the index, as far as its search found the
    true neighbours). A scan that returned fewer rows than it fetched saw the whole namespace; one
    with a floor kept everything that can reach ``kth``; for a query of zeros every cosine is 0
    and a scan's order (then by id) is the exact one.

    A clear answer of the index is trusted even when its neighbourhood is flat (the ``k``-th
    best little above its lowest row: a query far from everything, where HNSW misses more).
    Asking again there (for 8 times as many, when the gap was under 0.1) gave the exact top 10
    for 82 of 100 bench queries instead of 71 at 2.9 times the time (58.6 against 20.5 ms a
    search, mean), and changed no packed capsule of the 100 bundles; on MiniLM vectors of every
    BEAM turn no question needed it.
    """
    clear = kth is not None and answer.least is not None and answer.least + SLACK < kth
    if answer.mode == "scan":
        if ask.floor is not None or answer.returned < ask.fetch or kth is None or clear or zero:
            return None
        return Ask("scan", NO_LIMIT, (1.0 + kth - SLACK) / 2.0, ask.attempts)
    # The index skips vectors of zeros (cosine 0): the k-th must be clearly positive.
    if kth is not None and kth > SLACK:
        exhausted = answer.returned < ask.fetch  # the index holds fewer vectors than asked
        if exhausted or clear:
            return None
    attempts = ask.attempts + 1
    # Grow by GROW, or by what the namespace's share of the answer says it takes to see 2k of it.
    grow = 16 if answer.mine == 0 else min(16, max(GROW, -(-2 * k // answer.mine)))
    fetch = min(ask.fetch * grow, MAX_FETCH)
    if attempts > INDEX_RETRIES or ask.fetch >= MAX_FETCH or fetch >= answer.vectors:
        return Ask("scan", first, None, attempts)
    return Ask("index", fetch, None, attempts)


class Neo4jCandidates(CandidateReads):
    """Candidate reads through the store's boundary."""

    def __init__(self, boundary: Neo4jBoundary) -> None:
        self._boundary = boundary

    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        keys = [namespaced_key(namespace, t) for t in dict.fromkeys(terms)]
        row = self._boundary.read("term_stats", ns=namespace, keys=keys)[0]
        df = {item["key"].split(KEY_SEP, 1)[1]: int(item["df"]) for item in row["df"]}
        return TermStats(int(row["memories"]), int(row["totalLength"]), df)

    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        unique = list(dict.fromkeys(terms))
        found: dict[str, list[Any]] = {}
        for start in range(0, len(unique), TERMS_PER_QUERY):
            chunk = unique[start : start + TERMS_PER_QUERY]
            rows = self._boundary.read("candidates", query=lucene_query(namespace, chunk))
            for row in rows[0]["rows"]:
                found.setdefault(row[0], row)
        return candidates_from_rows([found[key] for key in sorted(found)], score_terms)

    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        rows = self._boundary.read(
            "recent_candidates", query=lucene_query(namespace, [term]), limit=limit
        )
        return candidates_from_rows(rows[0]["rows"], score_terms)

    def recall_candidates(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> tuple[TermStats, list[Candidate]]:
        """:meth:`term_stats` of ``terms`` and the candidates
        :func:`graphsvc.recall.plan_candidates` picks with them (``limit``: its candidate
        limit), with the frequencies of ``terms``, in one round trip (:meth:`recall_columns`),
        ordered as :meth:`candidates` (by id) or :meth:`recent_candidates` (newest first)."""
        stats, columns, recalled = self._recall(namespace, terms, limit)
        found = [columns.candidate(i) for i in range(len(columns))]
        if recalled.fallback:
            found.sort(key=lambda c: (-c.recorded_us, str(c.id)))
        else:
            found.sort(key=lambda c: str(c.id))
        return stats, found

    def recall_columns(
        self, namespace: str, terms: Sequence[str], limit: int, as_of: AsOf | None = None
    ) -> tuple[TermStats, CandidateColumns]:
        """As :meth:`Store.recall_columns`, in one round trip (recall_columns.cypher): the
        statistics, the plan and the candidates' columns, with the term frequencies counted in
        Cypher, so a candidate crosses Bolt as a few numbers and no Python object is made for
        it (ids become UUIDs only when scoring reads them)."""
        stats, columns, _ = self._recall(namespace, terms, limit, as_of=as_of)
        return stats, columns

    def recall_window(
        self,
        namespace: str,
        terms: Sequence[str],
        limit: int,
        guess: WindowGuess | None,
        as_of: AsOf | None = None,
    ) -> Recalled:
        """As :meth:`Store.recall_window`, in the one round trip of :meth:`recall_columns`:
        recall_columns.cypher scores the candidates as ``guess`` says and reads the best
        ``guess.size`` with them, so the window is usually read without a round trip of its
        own."""
        stats, columns, recalled = self._recall(namespace, terms, limit, guess, as_of)
        return Recalled(stats, columns, recalled.model, recalled.ahead, recalled.vectors)

    def _recall(
        self,
        namespace: str,
        terms: Sequence[str],
        limit: int,
        guess: WindowGuess | None = None,
        as_of: AsOf | None = None,
    ) -> tuple[TermStats, CandidateColumns, _Recalled]:
        """The statistics and candidate columns of a query, with whether the plan fell back to
        the newest memories of its rarest term, the namespace's vector model, and what ``guess``
        read ahead."""
        distinct = list(dict.fromkeys(terms))
        asked = sorted(distinct)
        row = self._boundary.read(
            "recall_columns",
            ns=namespace,
            sep=KEY_SEP,
            terms=asked,
            limit=limit,
            chunk=TERMS_PER_QUERY,
            none=NO_OCCURRED,
            needles=[f" {term} " for term in asked],
            guess=_guess_params(guess, asked, terms),
            asOf=as_of_param(as_of),
        )[0]
        df = {asked[i]: int(count) for i, count in row["known"]}
        stats = TermStats(
            int(row["memories"]), int(row["totalLength"]), {t: df[t] for t in distinct}
        )
        ahead = RowsAhead(row["ahead"]) if row["ahead"] else None
        recalled = _Recalled(
            row["fallback"] is not None, vector_model_from_row(row), ahead, int(row["vectors"])
        )
        return stats, columns_from_row(row, asked, terms), recalled

    def similar(
        self, namespace: str, query: bytes, k: int, ids: Sequence[UUID]
    ) -> list[tuple[UUID, float]]:
        """As :meth:`Store.similar`; how the ``k`` best are found and checked is in this module's
        docstring."""
        dimension = len(query)
        codes = np.frombuffer(query, dtype=np.int8)
        k = max(k, 0)
        first = max(k * OVERFETCH, MIN_FETCH) if k else 0
        base = {
            "ns": namespace,
            "dimension": dimension,
            "index": vector_index(dimension),
            "property": vector_property(dimension),
            "query": codes.tolist(),
            "zero": not bool(codes.any()),
            "exactBelow": EXACT_BELOW,
            "k": k,
            "margin": SLACK,
        }
        wanted = list(dict.fromkeys(str(i) for i in ids))
        row = self._boundary.read(
            "similar", **base, mode="auto" if k else "given", fetch=first, floor=None, ids=wanted
        )[0]
        model = vector_model_from_row(row)
        if model is None:
            return []
        if model.dimension != dimension:
            raise wrong_length("the query vector", dimension, namespace, model)
        pool: dict[str, list[float]] = {item["id"]: item["codes"] for item in row["given"]}
        given = [UUID(key) for key in pool]
        best: list[tuple[UUID, float]] = []
        if k:
            found = self._search(row, pool, codes, base, k, first)
            if found is None:  # the model changed between two round trips
                return []
            best = found
        uuids = [UUID(key) for key in pool]
        scores = dict(zip(uuids, self._exact(codes, list(pool.values())).tolist(), strict=True))
        return with_given(best, [(uuid, scores[uuid]) for uuid in given], k)

    def _search(
        self,
        row: Any,
        pool: dict[str, list[float]],
        codes: np.ndarray[Any, Any],
        base: Mapping[str, Any],
        k: int,
        first: int,
    ) -> list[tuple[UUID, float]] | None:
        """The exact ``k`` best, from the first answer ``row`` and as many more as
        :func:`next_ask` wants; every vector fetched is added to ``pool``. None when the model
        changed in between."""
        ask = Ask(mode=row["mode"], fetch=first)
        while True:
            if row["mode"] is None or row["dimension"] != base["dimension"]:
                return None
            part = row["indexed"] if row["mode"] == "index" else row["scanned"]
            for item in part["hits"]:
                pool[item["id"]] = item["codes"]
            uuids = [UUID(key) for key in pool]
            best = top_k(uuids, self._exact(codes, list(pool.values())), k)
            answer = Answer(
                mode=row["mode"],
                returned=int(part["returned"]),
                mine=int(part["mine"]),
                least=None if part["least"] is None else _cosine(float(part["least"])),
                vectors=int(row["vectors"]),
            )
            kth = best[-1][1] if len(best) == k else None
            following = next_ask(ask, answer, k=k, kth=kth, zero=base["zero"], first=first)
            if following is None:
                return best
            ask = following
            row = self._boundary.read(
                "similar", **base, mode=ask.mode, fetch=ask.fetch, floor=ask.floor, ids=[]
            )[0]

    @staticmethod
    def _exact(query: np.ndarray[Any, Any], rows: list[list[float]]) -> np.ndarray[Any, Any]:
        """Exact cosines of the query with stored vectors (floats that must be int8 codes)."""
        dimension = query.shape[0]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), dimension)
        if matrix.size and (
            np.any(np.rint(matrix) != matrix) or float(np.max(np.abs(matrix))) > 127.0
        ):
            raise StoreCorruptError(
                "a stored vector holds values that are not int8 codes: clear the namespace's "
                "vectors and run `graphsvc embed` again"
            )
        return cosines(query, matrix)
