"""The question-answering evaluation shared by LoCoMo and BEAM.

For every question it asks each system for a ranking over the same memories and keeps what the
metrics need. The systems, side by side:

- ``bm25``: bm25s over the memory texts (every memory scored, positive scores only, best first,
  ties by position);
- ``dense``: the embedder's cosine with every memory, computed as the stores compute it (int8
  codes, exact cosines; ties by position: :class:`graphsvc_lab.eval.vectors.DenseIndex`);
- ``lexical``: graphsvc without an embedder (``embed=off``): recall as it is without the model;
- ``hybrid``: graphsvc with the embedder (lexical + dense fusion), when the model is available;
- ``plain lexical`` / ``plain hybrid`` (with ``plain``): graphsvc on the same memories written as
  a chat application writes them: the converter's rows without its links (tags kept), so that
  nothing the converter adds beyond the memories counts.

Each graphsvc system loads the conversation into its own namespace (memory ids re-salted per
namespace). What is measured, precisely:

- **Ranking** (recall@k, all-evidence-hit@k, knowledge updates): graphsvc's ranked window, that is
  ``capsules + excluded`` of a bundle with ``minScore = 0``, sorted by score descending, then
  ``recordedAt`` descending, then id: the order the service ranks candidates in (the window holds
  the best ``GRAPHSVC_RANKED_LIMIT``, 50 by default). Packing, de-duplication and chronological
  rendering do not change it. The baselines rank the same number of memories.
- **Packing** (recall under a budget, tokens): the capsules of a bundle at that budget with
  ``minScore = 0`` (graphsvc also drops near-duplicates and capsules below the relative floor);
  the baselines pack their ranking greedily with the same token estimator and capsule cap.
- **Abstention**: each candidate signal (graphsvc's ``topScore`` and ``evidenceCoverage``, the
  best fused score of the ranked window, bm25s's top score, the top cosine) as an AUROC, and
  ``skipped`` of a bundle at the default budget with ``minScore = --min-score`` (the operating
  point). Unanswerable questions are the positives.
- **Chronology**: for answerable questions whose evidence spans two or more sessions, the order of
  the evidence capsules in the rendered bundle (default budget, ``minScore = 0``) against their true
  order; the baselines render best first.
- **Sweeps** (``--tune NAME=V1,V2,...``): the main graphsvc system (hybrid, else lexical) re-read
  with each combination; see :mod:`graphsvc_lab.eval.crossval`.
- **Latency**: the wall time of the thresholded bundle call and of one baseline query (query
  vectors come from the evaluation's vector cache once cached, so model time is left out then).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphsvc.model import ContextBundle
from graphsvc.service import MemoryService
from graphsvc_lab.eval.common import (
    Bm25Baseline,
    Corpus,
    RunContext,
    Tuning,
    describe_config,
    load_rows,
    pack_greedy,
    progress,
    timed,
)
from graphsvc_lab.eval.metrics import (
    NAN,
    all_hit_at_k,
    auroc,
    first_rank,
    kendall_tau,
    mean,
    median,
    operating_point,
    percentile,
    recall_at_k,
    recall_of,
    roc_curve,
)
from graphsvc_lab.eval.report import Cell, Curve, Plot, Report, Table
from graphsvc_lab.eval.vectors import DenseIndex

KS = (1, 5, 10)
CURVE_KS = tuple(range(1, 21))
BUDGETS = (500, 1000, 2000)
DEFAULT_BUDGET = 1000
# The scoring stage every bundle of a run uses (`--stage`).
DEFAULT_STAGE = "default"
SWEEP = (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)
# The false-abstention rate the abstention table reads each signal's recall at.
MAX_FALSE_ABSTENTION = 0.10

BM25 = "bm25"
DENSE = "dense"
LEXICAL = "lexical"
HYBRID = "hybrid"
PLAIN = "plain "
# Column order of every table (systems a run lacks are left out).
ORDER = (BM25, DENSE, LEXICAL, HYBRID, PLAIN + LEXICAL, PLAIN + HYBRID)
BASELINES = (BM25, DENSE)
_RESALT = uuid.UUID("5d3c2a1e-7b41-4f0e-9c6a-2e8f4b7d1a90")


@dataclass(frozen=True)
class Question:
    """A question with its gold evidence as memory keys (``source`` of the memories)."""

    qid: str
    conversation: str
    category: str
    text: str
    evidence: tuple[str, ...]
    answerable: bool
    original: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    #: Asked of another conversation's memories (:func:`foreign_questions`): unanswerable there by
    #: construction, a negative control for answerability; left out of every other figure.
    foreign: bool = False


@dataclass(frozen=True)
class Conversation:
    """One conversation (one namespace per system): its ingest rows, questions and each key's
    session."""

    name: str
    rows: list[dict[str, Any]]
    questions: list[Question]
    session: Mapping[str, str]


@dataclass
class Outcome:
    """What one system returned for one question."""

    ranked: list[str]
    packed: dict[int, list[str]]
    tokens: dict[int, int]
    top_score: float
    skipped: bool | None = None
    coverage: float = NAN
    window_top: float = NAN
    retrieval: str = ""
    chronological: bool = False
    dated_field: list[bool] = field(default_factory=list)
    dated_text: list[bool] = field(default_factory=list)
    seconds: float = NAN
    #: The bundle's answer evidence (graphsvc systems): what topScore is made of.
    answer_evidence: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepPoint:
    """The main graphsvc system's answer with one swept combination of constants."""

    ranked: list[str]
    top_score: float
    window_top: float


@dataclass
class Result:
    """A question and every system's outcome (by system name, :data:`ORDER`)."""

    question: Question
    true_order: dict[str, int]
    sessions: int
    outcomes: dict[str, Outcome]
    sweep: dict[str, SweepPoint] = field(default_factory=dict)

    @property
    def graphsvc(self) -> Outcome:
        """The main graphsvc system: hybrid when it ran, else lexical."""
        return self.outcomes.get(HYBRID) or self.outcomes[LEXICAL]

    @property
    def bm25(self) -> Outcome:
        """The bm25s baseline."""
        return self.outcomes[BM25]


def without_links(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The "plain" loading: the memories as the converter wrote them (text, kind, dates, tags,
    source), without any link, as a chat application that writes each turn would."""
    return [dict(row) for row in rows if row["type"] != "link"]


def resalted(rows: Sequence[dict[str, Any]], salt: str) -> list[dict[str, Any]]:
    """The rows with every memory id (and each link's ends) replaced by one derived from it and
    ``salt``: the same data under other ids, for loading it into another namespace (ids are unique
    across a store). Keys (``source`` of a memory) are kept."""

    def new(value: str) -> str:
        return str(uuid.uuid5(_RESALT, f"{salt}\x1f{value}"))

    out = []
    for row in rows:
        copy = dict(row)
        if row["type"] == "memory" and row.get("id"):
            copy["id"] = new(str(row["id"]))
        elif row["type"] == "link":
            copy["source"] = new(str(row["source"]))
            copy["target"] = new(str(row["target"]))
        out.append(copy)
    return out


def _ranked_window(bundle: ContextBundle, recorded: Mapping[Any, int]) -> list[Any]:
    window = list(bundle.capsules) + list(bundle.excluded)
    window.sort(key=lambda c: (-c.score, -recorded[c.memory_id], str(c.memory_id)))
    return window


def _graphsvc(
    service: MemoryService,
    namespace: str,
    q: Question,
    corpus: Corpus,
    min_score: float,
    stage: str = DEFAULT_STAGE,
) -> Outcome:
    key_of = corpus.key_of
    bundles = {
        b: service.bundle(namespace, q.text, budget_tokens=b, min_score=0.0, stage=stage)
        for b in BUDGETS
    }
    thresholded, seconds = timed(
        service.bundle,
        namespace,
        q.text,
        budget_tokens=DEFAULT_BUDGET,
        min_score=min_score,
        stage=stage,
    )
    default = bundles[DEFAULT_BUDGET]
    window = _ranked_window(default, corpus.recorded_us)
    gold = set(q.evidence)
    evidence_capsules = [c for c in default.capsules if key_of[c.memory_id] in gold]
    return Outcome(
        ranked=[key_of[c.memory_id] for c in window],
        packed={b: [key_of[c.memory_id] for c in bundle.capsules] for b, bundle in bundles.items()},
        tokens={b: bundle.used_tokens for b, bundle in bundles.items()},
        top_score=thresholded.top_score,
        skipped=thresholded.skipped,
        coverage=default.evidence_coverage,
        window_top=window[0].score if window else 0.0,
        retrieval=str(getattr(thresholded, "retrieval", LEXICAL)),
        chronological=default.chronological,
        dated_field=[c.occurred_at is not None for c in evidence_capsules],
        dated_text=[
            c.text.startswith("[") and not c.text.startswith("[undated]") for c in evidence_capsules
        ],
        seconds=seconds,
        answer_evidence=thresholded.answer_evidence.model_dump(),
    )


def _baseline(
    search: Callable[[str, int], list[tuple[int, float]]],
    texts: Sequence[str],
    keys: Sequence[str],
    q: Question,
    limit: int,
    max_items: int,
) -> Outcome:
    hits, seconds = timed(search, q.text, limit)
    order = [position for position, _ in hits]
    packed: dict[int, list[str]] = {}
    tokens: dict[int, int] = {}
    for budget in BUDGETS:
        chosen, spent = pack_greedy(texts, order, budget, max_items)
        packed[budget] = [keys[p] for p in chosen]
        tokens[budget] = spent
    gold = set(q.evidence)
    in_default = [k for k in packed[DEFAULT_BUDGET] if k in gold]
    top = hits[0][1] if hits else 0.0
    return Outcome(
        ranked=[keys[p] for p in order],
        packed=packed,
        tokens=tokens,
        top_score=top,
        window_top=top,
        dated_field=[False] * len(in_default),
        dated_text=[False] * len(in_default),
        seconds=seconds,
    )


def _sweep_point(
    service: MemoryService,
    namespace: str,
    q: Question,
    corpus: Corpus,
    config: Tuning,
    stage: str = DEFAULT_STAGE,
) -> SweepPoint:
    bundle = service.bundle(
        namespace, q.text, budget_tokens=DEFAULT_BUDGET, min_score=0.0, stage=stage
    )
    window = _ranked_window(bundle, corpus.recorded_us)
    return SweepPoint(
        ranked=[corpus.key_of[c.memory_id] for c in window[: max(CURVE_KS)]],
        top_score=bundle.top_score,
        window_top=window[0].score if window else 0.0,
    )


def _warm_vectors(ctx: RunContext, rows: Sequence[dict[str, Any]], name: str) -> None:
    """Embed the memories of ``rows`` into the vector cache first, with a progress bar (the
    hybrid service's writes and the dense baseline then read them back)."""
    embedder = ctx.embedder
    if embedder is None:
        return
    texts = [str(row["text"]) for row in rows if row["type"] == "memory"]
    todo = embedder.missing(texts)
    if not todo:
        return
    with progress(todo, f"embedding {name}", "text") as bar:
        embedder.progress = bar.update
        try:
            embedder.embed(texts)
        finally:
            embedder.progress = None


def _services(ctx: RunContext, plain: bool) -> list[tuple[str, MemoryService]]:
    """(system, service) of every graphsvc system of this run, in :data:`ORDER`."""
    mine = [(LEXICAL, ctx.service)] + ([(HYBRID, ctx.hybrid)] if ctx.hybrid is not None else [])
    if plain:
        mine += [(PLAIN + name, service) for name, service in list(mine)]
    return mine


FOREIGN = "foreign (asked of another conversation)"


def foreign_questions(
    conversations: Sequence[Conversation], index: int, count: int
) -> list[Question]:
    """``count`` answerable questions of the conversation after ``index`` (cyclically), evenly
    spread over its questions, to be asked of conversation ``index``: a question about what its
    memories never held, which memory should abstain on (a negative control for answerability,
    from the dev data's own questions; none with fewer than two conversations)."""
    if count <= 0 or len(conversations) < 2:
        return []
    home = conversations[index]
    other = conversations[(index + 1) % len(conversations)]
    pool = [q for q in other.questions if q.answerable]
    if not pool:
        return []
    step = max(1, len(pool) // count)
    return [
        Question(
            qid=f"{home.name}<-{q.qid}",
            conversation=home.name,
            category=FOREIGN,
            text=q.text,
            evidence=(),
            answerable=False,
            foreign=True,
        )
        for q in pool[::step][:count]
    ]


def run_questions(
    ctx: RunContext,
    dataset: str,
    conversations: Sequence[Conversation],
    min_score: float,
    limit: int | None,
    *,
    plain: bool = False,
    configs: Sequence[Tuning] = (),
    stage: str = DEFAULT_STAGE,
    foreign: float = 0.0,
) -> list[Result]:
    """Load each conversation into a fresh namespace per graphsvc system and run its questions
    through every system, each bundle at scoring ``stage``; with ``configs``, also through the
    main graphsvc system re-read with each combination of constants (its
    :attr:`Result.sweep`, by :func:`describe_config`). With ``foreign``, each conversation is
    also asked that share of its question count of another conversation's questions
    (:func:`foreign_questions`)."""
    settings = ctx.service.settings
    chosen = []
    for index, c in enumerate(conversations):
        own = c.questions[:limit] if limit is not None else c.questions
        extra = foreign_questions(conversations, index, round(foreign * len(own)))
        chosen.append((c, [*own, *extra]))
    systems = _services(ctx, plain)
    main = HYBRID if ctx.hybrid is not None else LEXICAL
    variants = [(describe_config(c), c, ctx.variant(ctx.default, c)) for c in configs]
    results: list[Result] = []
    with progress(sum(len(qs) for _, qs in chosen), f"eval {dataset}", "q") as bar:
        for number, (conv, questions) in enumerate(chosen):
            if not questions:
                continue
            _warm_vectors(ctx, conv.rows, conv.name)
            loaded: dict[str, tuple[str, Corpus]] = {}
            for index, (system, service) in enumerate(systems):
                bar.set_postfix_str(f"loading {conv.name} ({system})")
                rows = without_links(conv.rows) if system.startswith(PLAIN) else conv.rows
                if index:
                    rows = resalted(rows, system)
                namespace = ctx.namespace(dataset, f"{number}_{index}")
                name = f"{dataset}:{conv.name}" + (f" ({system})" if index else "")
                loaded[system] = (namespace, load_rows(service, namespace, rows, name))
            corpus = loaded[LEXICAL][1]
            bm25 = Bm25Baseline(corpus.texts)
            dense = (
                DenseIndex.build(ctx.embedder, corpus.texts) if ctx.embedder is not None else None
            )
            position = corpus.position
            bar.set_postfix_str(conv.name)
            for q in questions:
                evidence = tuple(k for k in q.evidence if k in position)
                q = Question(
                    q.qid,
                    q.conversation,
                    q.category,
                    q.text,
                    evidence,
                    q.answerable,
                    q.original,
                    q.updated,
                    q.foreign,
                )
                outcomes: dict[str, Outcome] = {}
                for name, search in ((BM25, bm25.search),) + (
                    ((DENSE, dense.search),) if dense is not None else ()
                ):
                    outcomes[name] = _baseline(
                        search,
                        corpus.texts,
                        corpus.keys,
                        q,
                        settings.ranked_limit,
                        settings.default_max_capsules,
                    )
                for system, service in systems:
                    namespace, mine = loaded[system]
                    outcomes[system] = _graphsvc(service, namespace, q, mine, min_score, stage)
                sweep = {
                    label: _sweep_point(variant, loaded[main][0], q, loaded[main][1], config, stage)
                    for label, config, variant in variants
                }
                results.append(
                    Result(
                        question=q,
                        true_order={k: position[k] for k in evidence},
                        sessions=len({conv.session.get(k, k) for k in evidence}),
                        outcomes=outcomes,
                        sweep=sweep,
                    )
                )
                bar.update(1)
    return results


# -- aggregation ---------------------------------------------------------------------------------


def systems_of(results: Sequence[Result]) -> list[str]:
    """The systems the results hold, in :data:`ORDER`."""
    present = set(results[0].outcomes) if results else {BM25, LEXICAL}
    return [s for s in ORDER if s in present]


def graphsvc_systems(results: Sequence[Result]) -> list[str]:
    """The graphsvc systems of the results (not the baselines)."""
    return [s for s in systems_of(results) if s not in BASELINES]


def _groups(results: Sequence[Result], categories: Sequence[str]) -> list[tuple[str, list[Result]]]:
    """(label, results) per category, then answerable overall."""
    groups = [(c, [r for r in results if r.question.category == c]) for c in categories]
    groups = [(c, rs) for c, rs in groups if rs]
    answerable = [r for r in results if r.question.answerable]
    groups.append(("overall (answerable)", answerable))
    return groups


def _with_evidence(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.question.evidence]


def recall_tables(results: Sequence[Result], categories: Sequence[str]) -> list[Table]:
    systems = systems_of(results)
    groups = _groups(_with_evidence(results), categories)
    tables = []
    for k in (5, 1, 10):
        table = Table(
            f"Evidence recall@k, k = {k} (share of a question's evidence in the top {k})",
            ["category", "n", *(f"{s} R@{k}" for s in systems)],
            key=f"recall_at_{k}",
        )
        for label, rs in groups:
            cells: list[Cell] = [label, len(rs)]
            cells += [
                mean(recall_at_k(r.outcomes[s].ranked, r.question.evidence, k) for r in rs)
                for s in systems
            ]
            table.rows.append(cells)
        tables.append(table)
    allhit = Table(
        "All-evidence-hit@5 (every evidence item in the top 5)",
        ["category", "n", *(f"{s} hit@5" for s in systems)],
        key="all_evidence_hit_at_5",
    )
    for label, rs in groups:
        cells = [label, len(rs)]
        cells += [
            mean(all_hit_at_k(r.outcomes[s].ranked, r.question.evidence, 5) for r in rs)
            for s in systems
        ]
        allhit.rows.append(cells)
    tables.append(allhit)
    return tables


def packing_tables(results: Sequence[Result], categories: Sequence[str]) -> list[Table]:
    systems = systems_of(results)
    note = (
        "graphsvc: capsules of `bundle(budgetTokens=B, minScore=0)`; bm25 and dense: their top "
        "hits packed greedily with the same estimator and capsule cap."
    )
    by_category = Table(
        f"Evidence recall of the packed bundle at {DEFAULT_BUDGET} tokens (minScore 0)",
        ["category", "n", *systems],
        note=note,
        key="packed_recall",
    )
    groups = _groups(_with_evidence(results), categories)
    for label, rs in groups:
        cells: list[Cell] = [label, len(rs)]
        cells += [
            mean(recall_of(r.outcomes[s].packed[DEFAULT_BUDGET], r.question.evidence) for r in rs)
            for s in systems
        ]
        by_category.rows.append(cells)
    by_budget = Table(
        "Packed recall by budget (answerable questions) and median tokens used",
        ["figure", *systems],
        key="packed_recall_by_budget",
    )
    answerable = groups[-1][1]
    for b in BUDGETS:
        by_budget.rows.append(
            [f"recall @{b}"]
            + [
                mean(recall_of(r.outcomes[s].packed[b], r.question.evidence) for r in answerable)
                for s in systems
            ]
        )
    for b in BUDGETS:
        by_budget.rows.append(
            [f"median tokens @{b}"]
            + [median([float(r.outcomes[s].tokens[b]) for r in results]) for s in systems]
        )
    return [by_category, by_budget]


@dataclass(frozen=True)
class Signal:
    """An abstention signal: higher means "abstain"; ``system`` has a ``skipped`` flag when the
    signal is the one the service thresholds."""

    label: str
    value: Callable[[Result], float]
    system: str | None = None


def _negated(system: str, attribute: str) -> Callable[[Result], float]:
    return lambda r: -float(getattr(r.outcomes[system], attribute))


def _uncovered(system: str) -> Callable[[Result], float]:
    return lambda r: 1.0 - r.outcomes[system].coverage


def candidate_signals(results: Sequence[Result]) -> list[Signal]:
    """Every candidate abstention signal the results carry."""
    systems = systems_of(results)
    out = [Signal("bm25 top score", _negated(BM25, "top_score"))]
    if DENSE in systems:
        out.append(Signal("dense top cosine", _negated(DENSE, "top_score")))
    for s in graphsvc_systems(results):
        out.append(Signal(f"{s} topScore", _negated(s, "top_score"), s))
        if s.endswith(HYBRID):
            out.append(Signal(f"{s} best fused score (ranked window)", _negated(s, "window_top")))
        out.append(Signal(f"{s} evidenceCoverage", _uncovered(s)))
    return out


def abstention_signals(results: Sequence[Result]) -> dict[str, tuple[list[float], list[float]]]:
    """Signal -> (positives, negatives), higher meaning "abstain"."""
    pos = [r for r in results if not r.question.answerable]
    neg = [r for r in results if r.question.answerable]
    return {
        s.label: ([s.value(r) for r in pos], [s.value(r) for r in neg])
        for s in candidate_signals(results)
    }


def abstention_tables(
    results: Sequence[Result], categories: Sequence[str], min_score: float, positive_label: str
) -> list[Table]:
    pos = [r for r in results if not r.question.answerable]
    neg = [r for r in results if r.question.answerable]
    cap = f"{MAX_FALSE_ABSTENTION:.0%}"
    table = Table(
        f"Abstention signals ({positive_label} as positives: {len(pos)}; answerable: {len(neg)})",
        [
            "signal",
            "AUROC",
            f"recall at <= {cap} false abstention",
            "false abstention there",
            f"recall at --min-score {min_score:g}",
            f"false abstention at --min-score {min_score:g}",
        ],
        note="AUROC is threshold-free: the chance an unanswerable question's signal says "
        "'abstain' more than an answerable one's. Recall = share of unanswerable questions "
        f"abstained on; the best threshold keeping false abstention within {cap} is chosen on "
        "these same questions (optimistic). At --min-score: the service's own `skipped` flag.",
        key="abstention",
    )
    for signal in candidate_signals(results):
        positives = [signal.value(r) for r in pos]
        negatives = [signal.value(r) for r in neg]
        _, tpr, fpr = operating_point(positives, negatives, MAX_FALSE_ABSTENTION)
        at_point: list[Any] = [None, None]
        if signal.system is not None:
            at_point = [
                mean(float(bool(r.outcomes[signal.system].skipped)) for r in pos),
                mean(float(bool(r.outcomes[signal.system].skipped)) for r in neg),
            ]
        table.rows.append([signal.label, auroc(positives, negatives), tpr, fpr, *at_point])
    mine = graphsvc_systems(results)
    by_category = Table(
        f"False abstention at --min-score {min_score:g} by category (answerable questions)",
        ["category", "n", *mine],
        key="false_abstention",
    )
    for label, rs in _groups(neg, categories):
        cells: list[Cell] = [label, len(rs)]
        cells += [mean(float(bool(r.outcomes[s].skipped)) for r in rs) for s in mine]
        by_category.rows.append(cells)
    sweep = Table(
        "Abstention by minScore (skipped = topScore < minScore)",
        ["minScore"] + [f"{s} {what}" for s in mine for what in ("recall", "false abstention")],
        note="recall: unanswerable questions skipped; false abstention: answerable ones skipped.",
        key="abstention_by_min_score",
    )
    for t in SWEEP:
        row: list[Any] = [f"{t:g}"]
        for s in mine:
            row.append(mean(float(r.outcomes[s].top_score < t) for r in pos))
            row.append(mean(float(r.outcomes[s].top_score < t) for r in neg))
        sweep.rows.append(row)
    return [table, by_category, sweep]


def _taus(rs: Sequence[Result], system: str) -> list[float]:
    values = []
    for r in rs:
        packed = r.outcomes[system].packed[DEFAULT_BUDGET]
        tau = kendall_tau(
            [k for k in packed if k in r.true_order],
            {k: float(v) for k, v in r.true_order.items()},
        )
        if not math.isnan(tau):
            values.append(tau)
    return values


def chronology_table(results: Sequence[Result], categories: Sequence[str]) -> Table:
    systems = systems_of(results)
    spanning = [r for r in results if r.question.answerable and r.sessions >= 2]
    table = Table(
        f"Chronology: answerable questions whose evidence spans >= 2 sessions ({len(spanning)})",
        ["figure", *systems],
        note="tau: Kendall tau between the rendered order of the evidence capsules (default "
        "budget, minScore 0) and their true order, over questions with >= 2 evidence capsules "
        "rendered. Dates: share of rendered evidence capsules with `occurredAt` / with a "
        "`[YYYY-MM-DD]` prefix in their text. The baselines render best first, undated.",
        key="chronology",
    )
    taus = {s: _taus(spanning, s) for s in systems}

    def ours(value: Callable[[str], float]) -> list[Any]:
        return [None if s in BASELINES else value(s) for s in systems]

    table.rows.append(["questions with >= 2 evidence rendered", *(len(taus[s]) for s in systems)])
    table.rows.append(["mean tau", *(mean(taus[s]) for s in systems)])
    table.rows.append(
        ["share with tau = 1", *(mean(float(t == 1.0) for t in taus[s]) for s in systems)]
    )
    table.rows.append(
        [
            "share rendered chronologically",
            *ours(lambda s: mean(float(r.outcomes[s].chronological) for r in spanning)),
        ]
    )
    table.rows.append(
        [
            "mean tau when rendered chronologically",
            *ours(lambda s: mean(_taus([r for r in spanning if r.outcomes[s].chronological], s))),
        ]
    )
    table.rows.append(
        [
            "dates carried (occurredAt)",
            *ours(lambda s: mean(float(d) for r in spanning for d in r.outcomes[s].dated_field)),
        ]
    )
    table.rows.append(
        [
            "dates carried (in the text)",
            *ours(lambda s: mean(float(d) for r in spanning for d in r.outcomes[s].dated_text)),
        ]
    )
    return table


def update_table(results: Sequence[Result]) -> Table | None:
    updates = [r for r in results if r.question.updated and r.question.original]
    if not updates:
        return None
    systems = systems_of(results)
    table = Table(
        f"Knowledge updates ({len(updates)} questions)",
        ["figure", *systems],
        note="Ranks in the ranked window; a fact not in the window ranks last.",
        key="knowledge_updates",
    )
    tests: tuple[tuple[str, Callable[[float, float], bool]], ...] = (
        ("updated fact ranks above the original", lambda u, o: u < o),
        ("updated fact in the top 5", lambda u, o: u <= 5),
        ("original fact in the top 5", lambda u, o: o <= 5),
    )
    for label, test in tests:
        row: list[Any] = [label]
        for s in systems:
            values = []
            for r in updates:
                ranked = r.outcomes[s].ranked
                values.append(
                    float(
                        test(
                            first_rank(ranked, r.question.updated),
                            first_rank(ranked, r.question.original),
                        )
                    )
                )
            row.append(mean(values))
        table.rows.append(row)
    return table


def retrieval_table(results: Sequence[Result]) -> Table:
    """How each graphsvc system's bundles were answered (the bundle's ``retrieval``): a check that
    hybrid ran hybrid and lexical lexical."""
    table = Table(
        "How the graphsvc systems answered (the bundle's `retrieval`)",
        ["system", "questions", "hybrid", "lexical"],
        key="retrieval",
    )
    for s in graphsvc_systems(results):
        modes = [r.outcomes[s].retrieval for r in results]
        table.rows.append([s, len(modes), modes.count(HYBRID), modes.count(LEXICAL)])
    return table


def timing_table(results: Sequence[Result]) -> Table:
    systems = systems_of(results)
    table = Table(
        "Latency per question",
        ["figure", *systems],
        note="graphsvc: one bundle call at the default budget; bm25: one bm25s query; dense: one "
        "query vector and the cosines with every memory. Query vectors come from the vector "
        "cache once cached (model time left out then).",
        key="latency",
    )
    table.rows.append(
        ["p50 (ms)", *(median([r.outcomes[s].seconds * 1000 for r in results]) for s in systems)]
    )
    table.rows.append(
        [
            "p95 (ms)",
            *(percentile([r.outcomes[s].seconds * 1000 for r in results], 95) for s in systems),
        ]
    )
    return table


def plots(results: Sequence[Result], categories: Sequence[str]) -> list[Plot]:
    systems = systems_of(results)
    answerable = _with_evidence([r for r in results if r.question.answerable])
    curves = [
        Curve(
            s,
            list(CURVE_KS),
            [
                mean(recall_at_k(r.outcomes[s].ranked, r.question.evidence, k) for r in answerable)
                for k in CURVE_KS
            ],
            dashed=s in BASELINES,
        )
        for s in systems
    ]
    main = [BM25, HYBRID if HYBRID in systems else LEXICAL]
    by_category = []
    for color, c in enumerate(categories):
        rs = _with_evidence(
            [r for r in results if r.question.category == c and r.question.answerable]
        )
        if not rs:
            continue
        for s in main:
            ys = [
                mean(recall_at_k(r.outcomes[s].ranked, r.question.evidence, k) for r in rs)
                for k in CURVE_KS
            ]
            by_category.append(
                Curve(f"{s} {c}", list(CURVE_KS), ys, dashed=s in BASELINES, color=color % 10)
            )
    out = [
        Plot("recall_at_k.png", "Evidence recall@k (answerable questions)", "k", "recall", curves),
        Plot(
            "recall_at_k_by_category.png",
            "Evidence recall@k by category",
            "k",
            "recall",
            by_category,
        ),
    ]
    signals = abstention_signals(results)
    if all(pos and neg for pos, neg in signals.values()):
        roc = []
        for label, (pos, neg) in signals.items():
            points = roc_curve(pos, neg)
            roc.append(
                Curve(
                    f"{label} (AUROC {auroc(pos, neg):.3f})",
                    [p[0] for p in points],
                    [p[1] for p in points],
                )
            )
        out.append(
            Plot(
                "abstention_roc.png",
                "Abstention ROC (unanswerable = positive)",
                "false positive rate",
                "true positive rate",
                roc,
                diagonal=True,
            )
        )
    return out


def table_figures(table: Table) -> dict[str, Any]:
    """A table's cells by row label and column."""
    return {str(row[0]): dict(zip(table.header[1:], row[1:], strict=True)) for row in table.rows}


def figures(results: Sequence[Result], tables: Sequence[Table]) -> dict[str, Any]:
    """Machine-readable figures: every table's cells by its key, and ``recall_at_k`` (all k)."""
    out: dict[str, Any] = {"questions": len(results), "systems": systems_of(results)}
    for table in tables:
        out[table.key or table.title] = table_figures(table)
    out["recall_at_k"] = {str(k): out[f"recall_at_{k}"] for k in KS if f"recall_at_{k}" in out}
    return out


def write_questions(results: Sequence[Result], path: Path) -> None:
    """One JSON line per question: evidence ranks and packing of every system (for analysis)."""
    with path.open("w", encoding="utf-8") as handle:
        for r in results:
            row: dict[str, Any] = {"question": asdict(r.question), "sessions": r.sessions}
            for s, o in r.outcomes.items():
                row[s] = {
                    "evidence_ranks": [first_rank(o.ranked, [k]) for k in r.question.evidence],
                    "top5": o.ranked[:5],
                    "packed1000": o.packed[DEFAULT_BUDGET],
                    "top_score": o.top_score,
                    "window_top": o.window_top,
                    "retrieval": o.retrieval or None,
                    "skipped": o.skipped,
                    "coverage": o.coverage,
                    "answer_evidence": o.answer_evidence,
                }
            if r.sweep:
                row["sweep"] = {
                    label: {
                        "evidence_ranks": [first_rank(p.ranked, [k]) for k in r.question.evidence],
                        "top_score": p.top_score,
                        "window_top": p.window_top,
                    }
                    for label, p in r.sweep.items()
                }
            handle.write(
                json.dumps(row, ensure_ascii=False, default=str).replace("Infinity", "null") + "\n"
            )


def foreign_table(results: Sequence[Result], min_score: float) -> Table | None:
    """How the graphsvc systems answered the foreign questions (None without any)."""
    foreign = [r for r in results if r.question.foreign]
    if not foreign:
        return None
    mine = graphsvc_systems(foreign)
    table = Table(
        f"Foreign questions: {len(foreign)} answerable questions of another conversation, asked "
        "of this one's memories (unanswerable here)",
        ["figure", *mine],
        note="A negative control for answerability (`graphsvc eval answerability fit` counts "
        "them as unanswerable); left out of every other table.",
        key="foreign",
    )
    table.rows.append(
        [
            f"skipped at --min-score {min_score:g}",
            *(mean(float(bool(r.outcomes[s].skipped)) for r in foreign) for s in mine),
        ]
    )
    table.rows.append(
        ["median topScore", *(median([r.outcomes[s].top_score for r in foreign]) for s in mine)]
    )
    return table


def build_report(
    dataset: str,
    preamble: list[str],
    results: Sequence[Result],
    categories: Sequence[str],
    min_score: float,
    positive_label: str,
    extra: Sequence[Table] = (),
) -> Report:
    """The report of a run: recall, packing, abstention, chronology, knowledge updates, then
    ``extra`` tables (the cross-validation), latency last. Foreign questions have a table of
    their own and take part in no other figure."""
    foreign = foreign_table(results, min_score)
    results = [r for r in results if not r.question.foreign]
    categories = [c for c in categories if c != FOREIGN]
    tables = recall_tables(results, categories)
    tables += packing_tables(results, categories)
    if any(not r.question.answerable for r in results) and any(
        r.question.answerable for r in results
    ):
        tables += abstention_tables(results, categories, min_score, positive_label)
    tables.append(chronology_table(results, categories))
    updates = update_table(results)
    if updates is not None:
        tables.append(updates)
    if foreign is not None:
        tables.append(foreign)
    tables += list(extra)
    tables.append(retrieval_table(results))
    timings = [timing_table(results)]
    return Report(
        dataset, preamble, tables, plots(results, categories), figures(results, tables), timings
    )


__all__ = [
    "BASELINES",
    "FOREIGN",
    "ORDER",
    "Conversation",
    "Outcome",
    "Question",
    "Result",
    "SweepPoint",
    "build_report",
    "candidate_signals",
    "foreign_questions",
    "foreign_table",
    "graphsvc_systems",
    "resalted",
    "run_questions",
    "systems_of",
    "without_links",
    "write_questions",
]
