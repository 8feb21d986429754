"""The ranking pipeline: a query's candidates from the store, scored, expanded over answers,
attributed, fused with the search by meaning, in rank order (docs/design.md, read semantics).

:class:`RecallPipeline` is the one part of recall that talks to the store. It gets what it
needs and nothing more: the store, the dense recall, the :class:`RecallPolicy`, the pool of the
reads that run beside a request's own, and the odds of the early walk. Everything it computes
goes through the pure functions of the other modules.

A request's query is analysed once (:meth:`RecallPipeline.analyse`): a
:class:`~graphsvc.recall.query.Query` holding its terms and the future of its codes, which the
pipeline's :class:`~graphsvc.recall.query_encoder.QueryEncoder` starts encoding at once; every
stage reads that one value, so a request tokenises its query once and encodes it once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from graphsvc.embedding.codes import with_given
from graphsvc.embedding.dense_recall import HYBRID, LEXICAL, DenseRecall, Retrieval
from graphsvc.errors import GraphsvcError, StoreUnavailableError
from graphsvc.model import AsOf, LinkKind, Memory
from graphsvc.recall.answerability import LEXICAL as LEXICAL_ANSWERABILITY
from graphsvc.recall.answerability import Evidence, evidence_of, probability
from graphsvc.recall.conversation import answer_seeds, attribute, expand_answers, unlinked_seeds
from graphsvc.recall.fusion import calibrate, fuse
from graphsvc.recall.policy import RecallPolicy
from graphsvc.recall.query import Query
from graphsvc.recall.query_encoder import QueryEncoder
from graphsvc.recall.scoring import (
    Ranked,
    Scored,
    apply_supersessions,
    attach,
    get_stage,
    rank_columns,
    rank_order,
    window_guess,
)
from graphsvc.store.base import Store
from graphsvc.store.candidates import ReadAhead, TermStats
from graphsvc.store.graph import Walk
from graphsvc.text import query_terms

T = TypeVar("T")


@dataclass(frozen=True)
class Ranking:
    """A query's ranked window: the query (:class:`Query`: its terms) and the statistics, the
    scored memories (supersessions applied), how it was found, the evidence that memory holds
    the answer and the probability answerability makes of it (``top_score``, what ``minScore``
    is compared with), and what recall by meaning did not see."""

    query: Query
    stats: TermStats
    ranked: list[Scored]
    retrieval: Retrieval
    evidence: Evidence
    top_score: float
    #: Memories of the namespace that wait for their vector (found by words only), and why
    #: recall by meaning is incomplete or off (None: complete): :meth:`DenseRecall.backlog`.
    pending_vectors: int = 0
    retrieval_note: str | None = None

    @property
    def terms(self) -> list[str]:
        """The query's analysed terms."""
        return self.query.terms


class ReadAheadPool:
    """The threads of the reads that run beside a request's own (:attr:`Store.overlapped_reads`):
    the search by meaning of a hybrid bundle, the early walk of a reconstruct. Made on first
    use. At most two per request, and a server runs at most ``api_threads`` requests at once,
    so a pool of twice that never queues one."""

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(self, call: Callable[..., T], /, *args: Any) -> Future[T]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="graphsvc-beside")
            return self._pool.submit(call, *args)

    def close(self) -> None:
        """Stop the threads (reads not started are cancelled). Safe to call twice."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


class GuessOdds:
    """Per namespace, how often an early walk's guess has held lately: a moving average of the
    outcomes (each new one weighs :attr:`WEIGHT`), starting at 1, so a namespace is guessed for
    until its guesses mostly fail. The outcome is recorded whether or not a walk started, so
    the odds follow the data either way. At most :attr:`NAMESPACES` are kept (all are forgotten
    past that: they start again at 1)."""

    WEIGHT = 0.1
    LIKELY = 0.5
    NAMESPACES = 4096

    def __init__(self) -> None:
        self._odds: dict[str, float] = {}
        self._lock = threading.Lock()

    def likely(self, namespace: str) -> bool:
        return self._odds.get(namespace, 1.0) >= self.LIKELY

    def record(self, namespace: str, held: bool) -> None:
        with self._lock:
            if namespace not in self._odds and len(self._odds) >= self.NAMESPACES:
                self._odds.clear()
            before = self._odds.get(namespace, 1.0)
            self._odds[namespace] = (1.0 - self.WEIGHT) * before + self.WEIGHT * float(held)


class EarlyWalk:
    """A reconstruct's walk, started early on a store whose reads wait on a server
    (:attr:`Store.overlapped_reads`): from the best ``k`` of the lexical ranking, on a thread of
    its own, while the ranked window is read and the hits are settled. The hits are those same
    memories in that order unless answers, attribution or supersessions moved one (or a memory
    was forgotten meanwhile); when they are, the early walk is the walk, as a walk is a function
    of its starts; when not, it is dropped and the walk made from the hits. Either way the belief
    is the same bytes; only the time differs (one round trip fewer when the guess holds).

    How often the guess holds depends on the data (causal graphs nearly always, chats of
    questions and answers seldom), so each namespace keeps its odds (:class:`GuessOdds`) and an
    early walk starts only where the guess has mostly held: elsewhere it would be a wasted
    query."""

    def __init__(
        self,
        store: Store,
        pool: ReadAheadPool,
        odds: GuessOdds,
        namespace: str,
        k: int,
        depth: int,
        max_nodes: int,
        as_of: AsOf | None = None,
    ) -> None:
        self._as_of = as_of
        self._store = store
        self._pool = pool
        self._odds = odds
        self._namespace = namespace
        self._k = k
        self._depth = depth
        self._max_nodes = max_nodes
        #: Whether it walks early: then the window is read beside the walk, not ahead with the
        #: candidates (:meth:`Store.recall_window`), which would leave the walk nothing to
        #: overlap but make the first read longer.
        self.walks = odds.likely(namespace)
        self._starts: list[UUID] | None = None
        self._future: Future[Walk] | None = None

    def start(self, ranked: Sequence[Ranked]) -> None:
        """Guess the hits: the first ``k`` of ``ranked`` that score above 0; walk from them now
        when the namespace's guesses have mostly held."""
        starts = [r.id for r in ranked if r.score > 0.0][: self._k]
        self._starts = starts
        if self.walks:
            self._future = self._pool.submit(
                self._store.walk, self._namespace, starts, self._depth, self._max_nodes, self._as_of
            )

    def walk(self, starts: list[UUID]) -> Walk:
        """The walk from ``starts``: the early one when it started from them, else a new one."""
        held = starts == self._starts
        self._odds.record(self._namespace, held)
        future, self._future = self._future, None
        if future is not None:
            if held:
                try:
                    return future.result()
                except StoreUnavailableError:
                    raise  # the store spent its outage budget on it: again would double it
                except GraphsvcError:
                    pass  # asked again below, as the walk would have been without it
            else:
                future.cancel()  # not started yet: never run; running: its answer is dropped
        return self._store.walk(self._namespace, starts, self._depth, self._max_nodes, self._as_of)


class RecallPipeline:
    """Ranks a query's memories on one store under one policy.

    Args:
        store: an opened store.
        dense: the encoder for recall by meaning (:class:`DenseRecall`; without a model, the
            pipeline is lexical-only).
        policy: the constants of every stage.
        pool: the threads of the reads beside a request's own (its owner closes it).
        odds: the early walk's odds per namespace (:class:`GuessOdds`).
    """

    def __init__(
        self,
        store: Store,
        dense: DenseRecall,
        policy: RecallPolicy,
        pool: ReadAheadPool,
        odds: GuessOdds | None = None,
    ) -> None:
        self.store = store
        self.dense = dense
        self.policy = policy
        self.pool = pool
        self.odds = odds if odds is not None else GuessOdds()
        #: The codes of its queries, each encoded once (:meth:`analyse`).
        self.queries = QueryEncoder(dense)

    def close(self) -> None:
        """Stop the query encoder's thread (a later query starts it again); the pool is its
        owner's to close."""
        self.queries.close()

    def analyse(self, namespace: str, text: str) -> Query:
        """The query ``text`` as every stage reads it: its terms, and its codes encoding now on the
        encoder's thread (onnxruntime runs without the GIL, so it overlaps the lexical ranking)
        unless recall is lexical-only or ``namespace`` was last found lexical
        (:meth:`QueryEncoder.soon`)."""
        return Query(text, query_terms(text), self.queries.soon(text, namespace))

    def rank(
        self,
        namespace: str,
        text: str,
        stage_name: str,
        early: Callable[[list[Ranked]], None] | None = None,
        read_ahead: bool = True,
        as_of: AsOf | None = None,
    ) -> Ranking:
        """Candidates for the query ``text``, scored, in rank order with supersessions applied.
        ``early`` is handed the lexical ranking as soon as it is known, before its memories are
        read (a reconstruct starts its walk there: :class:`EarlyWalk`). ``read_ahead``: the store
        may read the likely window with the candidates (:meth:`Store.recall_window`). ``as_of``:
        only the memories visible then take part (the stores filter the candidates and the
        walks; the statistics stay the namespace's now)."""
        lexical = self.policy.lexical
        stage = lexical.stage(get_stage(stage_name))
        query = self.analyse(namespace, text)
        terms = query.terms
        # On Neo4j the search by meaning runs beside the lexical part too; the namespace's model
        # comes back with the candidates, so both are skipped only for a namespace last found
        # lexical (one store round trip fewer than asking for the model first).
        nearest = self._nearest_soon(namespace, query) if query.codes is not None else None
        # The window's memories come back with the candidates where a read waits on a server:
        # the store ranks them as rank_columns will, and the window reads what it missed.
        guess = window_guess(stage, lexical.ranked_limit, lexical.bm25_b) if read_ahead else None
        recalled = self.store.recall_window(namespace, terms, lexical.candidate_limit, guess, as_of)
        stats, ahead = recalled.stats, recalled.ahead
        hybrid = self.dense.for_model(namespace, recalled.model) is not None
        ranked = rank_columns(
            terms, stats, recalled.columns, stage, lexical.ranked_limit, lexical.bm25_b
        )
        if early is not None:
            early(ranked)
        memories, pairs = self.store.window(namespace, [r.id for r in ranked], ahead, as_of)
        direct = attach(ranked, memories)
        scored, pairs = self._with_answers(namespace, direct, terms, pairs, as_of)
        unattributed = max((item.evidence for item in scored), default=0.0)
        scored = rank_order(attribute(scored, terms, self.policy.conversation), direct)[
            : lexical.ranked_limit
        ]
        retrieval = LEXICAL
        model = LEXICAL_ANSWERABILITY
        if hybrid:
            retrieval = HYBRID
            fused, more, cosine = self._fuse(
                namespace, query, scored, stats.avg_length, nearest, ahead, as_of
            )
            evidence = evidence_of(terms, stats, scored, unattributed, cosine)
            model = self.dense.answerability() or LEXICAL_ANSWERABILITY
            scored = fused
            pairs = list(pairs) + more
        else:
            if nearest is not None:
                nearest.cancel()  # the namespace is lexical: its answer (empty) is not needed
            evidence = evidence_of(terms, stats, scored, unattributed)
        # Memory that offers nothing cannot hold the answer, whatever the model would make of
        # the evidence of an empty ranking.
        top = probability(evidence, model) if scored else 0.0
        pending, note = self.dense.backlog(recalled.model, recalled.vectors, stats.n_docs)
        ordered = apply_supersessions(scored, pairs)
        return Ranking(query, stats, ordered, retrieval, evidence, top, pending, note)

    def _with_answers(
        self,
        namespace: str,
        direct: list[Scored],
        terms: Sequence[str],
        pairs: Sequence[tuple[UUID, UUID]],
        as_of: AsOf | None,
    ) -> tuple[list[Scored], list[tuple[UUID, UUID]]]:
        """The direct hits with the answers to the questions among the best of them
        (:func:`expand_answers`), and the supersession pairs with those among what the walk to
        the answers reached; the hits and ``pairs`` as they are when no question leads."""
        conversation = self.policy.conversation
        seeds = answer_seeds(direct, conversation)
        if not seeds:
            return direct, list(pairs)
        # One hop from the questions among the best hits: their answers (PRECEDES) join the
        # ranking below them; supersessions among what the walk reached count too.
        walk = self.store.walk(
            namespace, [s.memory.id for s in seeds], 1, self.policy.walk.max_nodes, as_of
        )
        # A question that precedes nothing is followed by what was written after it.
        unlinked = unlinked_seeds(seeds, walk.links, conversation)
        after = self.store.next_recorded(namespace, unlinked) if unlinked else []
        if after and as_of is not None:
            seen = self.store.visible(namespace, [m.id for _, m in after], as_of)
            after = [(asked, m) for asked, m in after if m.id in seen]
        scored = expand_answers(direct, seeds, walk, list(terms), after, conversation)
        superseding = [
            (lk.source, lk.target) for lk in walk.links if lk.kind is LinkKind.SUPERSEDES
        ]
        return scored, [*pairs, *superseding]

    def hits_and_walk(
        self, namespace: str, cue: str, k: int, depth: int, as_of: AsOf | None = None
    ) -> tuple[list[Scored], Walk]:
        """A reconstruct's hits (the best ``k`` ranked memories that score above 0) and the walk
        of ``depth`` around them; on a store whose reads wait on a server, the walk starts early
        where the namespace's guesses have mostly held (:class:`EarlyWalk`)."""
        max_nodes = self.policy.walk.max_nodes
        early = (
            EarlyWalk(self.store, self.pool, self.odds, namespace, k, depth, max_nodes, as_of)
            if self.store.overlapped_reads
            else None
        )
        ranked = self.rank(
            namespace,
            cue,
            "default",
            early.start if early else None,
            read_ahead=early is None or not early.walks,
            as_of=as_of,
        ).ranked
        hits = [item for item in ranked if item.score > 0.0][:k]
        starts = [h.memory.id for h in hits]
        walk = (
            early.walk(starts)
            if early is not None
            else self.store.walk(namespace, starts, depth, max_nodes, as_of)
        )
        return hits, walk

    def _fuse(
        self,
        namespace: str,
        query: Query,
        scored: list[Scored],
        avg_length: float,
        nearest: Future[list[tuple[UUID, float]]] | None = None,
        ahead: ReadAhead | None = None,
        as_of: AsOf | None = None,
    ) -> tuple[list[Scored], list[tuple[UUID, UUID]], dict[UUID, float]]:
        """Hybrid recall: the exact cosines of the ranked memories and the ``k`` nearest by
        meaning (``nearest``, when :meth:`_nearest_soon` started the search; ``ahead``: what
        the store read ahead of the window, which may hold some of them), fused with the
        lexical-graph scores (:func:`fuse`); the supersessions the memories found only by
        meaning take part in; and the calibrated cosines of them all."""
        fusion = self.policy.fusion
        if query.codes is None:  # the namespace was last found lexical: not encoded yet
            query = query.encoded(self.queries.soon(query.text))
        codes = query.vector()
        present = {item.memory.id for item in scored}
        ranked_ids = [item.memory.id for item in scored]
        if nearest is None:
            hits = self.store.similar(namespace, codes, fusion.k, ranked_ids)
        else:
            given = self.store.similar(namespace, codes, 0, ranked_ids) if ranked_ids else []
            hits = with_given(nearest.result(), given, fusion.k)
        unrelated = self.dense.unrelated_cosine()
        hits = [(memory_id, calibrate(value, unrelated)) for memory_id, value in hits]
        cosine = dict(hits)
        extra_ids = [
            memory_id
            for memory_id, value in hits
            if memory_id not in present and value >= fusion.min_cosine
        ]
        if extra_ids and as_of is not None:  # the search by meaning is not filtered: these are
            seen = self.store.visible(namespace, extra_ids, as_of)
            extra_ids = [memory_id for memory_id in extra_ids if memory_id in seen]
        extra: list[Memory] = []
        pairs: list[tuple[UUID, UUID]] = []
        if extra_ids:
            extra, _ = self.store.window(namespace, extra_ids, ahead, as_of)
            pairs = self.store.supersessions(namespace, [*present, *extra_ids], as_of)
        # Min-max needs a baseline of unrelated cosines: the k nearest of a namespace that holds
        # at least that many vectors. A smaller namespace is fused relatively, so the weaker of
        # two matches is not scaled to nothing.
        mode = fusion.mode
        if mode == "minmax" and len(hits) < fusion.k:
            mode = "relative"
        fused = fuse(
            scored,
            cosine,
            extra,
            fusion.weight,
            query.terms,
            mode,
            fusion.length_b,
            avg_length,
            fusion.rrf_k,
        )
        return fused[: self.policy.lexical.ranked_limit], pairs, cosine

    def _nearest_soon(
        self, namespace: str, query: Query
    ) -> Future[list[tuple[UUID, float]]] | None:
        """On a store whose reads wait on a server (:attr:`Store.overlapped_reads`), start the
        search for the ``k`` memories nearest ``query`` by meaning now (with its codes as soon as
        they are encoded), on a thread of its own,
        so that it runs while the bundle ranks lexically; :meth:`_fuse` collects it. None on
        other stores, or with ``k`` 0 (the search then runs in :meth:`_fuse`)."""
        k = self.policy.fusion.k
        if not self.store.overlapped_reads or k <= 0:
            return None

        def search() -> list[tuple[UUID, float]]:
            return self.store.similar(namespace, query.vector(), k, [])

        return self.pool.submit(search)


__all__ = ["EarlyWalk", "GuessOdds", "Ranking", "ReadAheadPool", "RecallPipeline"]
