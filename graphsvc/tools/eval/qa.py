"""The question-answering evaluation shared by LoCoMo and BEAM.

For every question it asks graphsvc for bundles and bm25s for a ranking over the same memories,
and keeps what the metrics need. What is measured, precisely:

- **Ranking** (recall@k, all-evidence-hit@k, knowledge updates): graphsvc's ranked window, that is
  ``capsules + excluded`` of a bundle with ``minScore = 0``, sorted by score descending, then
  ``recordedAt`` descending, then id: the order the service ranks candidates in (the window holds
  the best ``GRAPHSVC_RANKED_LIMIT``, 50 by default). Packing, de-duplication and chronological
  rendering do not change it. bm25s: every memory scored, positive scores only, best first, ties
  by position.
- **Packing** (recall under a budget, tokens): the capsules of a bundle at that budget with
  ``minScore = 0`` (graphsvc also drops near-duplicates and capsules below the relative floor);
  bm25s packs its ranking greedily with the same token estimator and the same capsule cap.
- **Abstention**: ``topScore`` of the bundle and ``skipped`` of a bundle at the default budget with
  ``minScore = --min-score``; bm25s's top score. Unanswerable questions are the positives.
- **Chronology**: for answerable questions whose evidence spans two or more sessions, the order of
  the evidence capsules in the rendered bundle (default budget, ``minScore = 0``) against their true
  order; bm25s renders best first.
- **Latency**: the wall time of the thresholded bundle call and of one bm25s query.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphsvc.model import ContextBundle
from graphsvc.tools.eval.common import (
    Bm25Baseline,
    RunContext,
    load_rows,
    pack_greedy,
    progress,
    timed,
)
from graphsvc.tools.eval.metrics import (
    NAN,
    all_hit_at_k,
    auroc,
    first_rank,
    kendall_tau,
    mean,
    median,
    percentile,
    precision_recall_f1,
    recall_at_k,
    recall_of,
    roc_curve,
)
from graphsvc.tools.eval.report import Curve, Plot, Report, Table

KS = (1, 5, 10)
CURVE_KS = tuple(range(1, 21))
BUDGETS = (500, 1000, 2000)
DEFAULT_BUDGET = 1000
SWEEP = (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)


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


@dataclass(frozen=True)
class Conversation:
    """One conversation (one namespace): its ingest rows, questions and each key's session."""

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
    chronological: bool = False
    dated_field: list[bool] = field(default_factory=list)
    dated_text: list[bool] = field(default_factory=list)
    seconds: float = NAN


@dataclass
class Result:
    """A question and both systems' outcomes."""

    question: Question
    true_order: dict[str, int]
    sessions: int
    graphsvc: Outcome
    bm25: Outcome


def _ranked_keys(
    bundle: ContextBundle, key_of: Mapping[Any, str], recorded: Mapping[Any, int]
) -> list[str]:
    window = list(bundle.capsules) + list(bundle.excluded)
    window.sort(key=lambda c: (-c.score, -recorded[c.memory_id], str(c.memory_id)))
    return [key_of[c.memory_id] for c in window]


def _graphsvc(
    ctx: RunContext,
    namespace: str,
    q: Question,
    key_of: Mapping[Any, str],
    recorded: Mapping[Any, int],
    min_score: float,
) -> Outcome:
    service = ctx.service
    bundles = {
        b: service.bundle(namespace, q.text, budget_tokens=b, min_score=0.0) for b in BUDGETS
    }
    thresholded, seconds = timed(
        service.bundle, namespace, q.text, budget_tokens=DEFAULT_BUDGET, min_score=min_score
    )
    default = bundles[DEFAULT_BUDGET]
    gold = set(q.evidence)
    evidence_capsules = [c for c in default.capsules if key_of[c.memory_id] in gold]
    return Outcome(
        ranked=_ranked_keys(default, key_of, recorded),
        packed={b: [key_of[c.memory_id] for c in bundle.capsules] for b, bundle in bundles.items()},
        tokens={b: bundle.used_tokens for b, bundle in bundles.items()},
        top_score=thresholded.top_score,
        skipped=thresholded.skipped,
        coverage=default.evidence_coverage,
        chronological=default.chronological,
        dated_field=[c.occurred_at is not None for c in evidence_capsules],
        dated_text=[
            c.text.startswith("[") and not c.text.startswith("[undated]") for c in evidence_capsules
        ],
        seconds=seconds,
    )


def _baseline(
    index: Bm25Baseline,
    texts: Sequence[str],
    keys: Sequence[str],
    q: Question,
    limit: int,
    max_items: int,
) -> Outcome:
    hits, seconds = timed(index.search, q.text, limit)
    order = [position for position, _ in hits]
    packed: dict[int, list[str]] = {}
    tokens: dict[int, int] = {}
    for budget in BUDGETS:
        chosen, spent = pack_greedy(texts, order, budget, max_items)
        packed[budget] = [keys[p] for p in chosen]
        tokens[budget] = spent
    gold = set(q.evidence)
    in_default = [k for k in packed[DEFAULT_BUDGET] if k in gold]
    return Outcome(
        ranked=[keys[p] for p in order],
        packed=packed,
        tokens=tokens,
        top_score=hits[0][1] if hits else 0.0,
        dated_field=[False] * len(in_default),
        dated_text=[False] * len(in_default),
        seconds=seconds,
    )


def run_questions(
    ctx: RunContext,
    dataset: str,
    conversations: Sequence[Conversation],
    min_score: float,
    limit: int | None,
) -> list[Result]:
    """Load each conversation into its own fresh namespace and run its questions."""
    settings = ctx.service.settings
    chosen = [(c, c.questions[:limit] if limit is not None else c.questions) for c in conversations]
    results: list[Result] = []
    with progress(sum(len(qs) for _, qs in chosen), f"eval {dataset}", "q") as bar:
        for number, (conv, questions) in enumerate(chosen):
            if not questions:
                continue
            bar.set_postfix_str(f"loading {conv.name}")
            namespace = ctx.namespace(dataset, number)
            corpus = load_rows(ctx.service, namespace, conv.rows, f"{dataset}:{conv.name}")
            index = Bm25Baseline(corpus.texts)
            position = corpus.position
            recorded = corpus.recorded_us
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
                )
                ours = _graphsvc(ctx, namespace, q, corpus.key_of, recorded, min_score)
                theirs = _baseline(
                    index,
                    corpus.texts,
                    corpus.keys,
                    q,
                    settings.ranked_limit,
                    settings.default_max_capsules,
                )
                results.append(
                    Result(
                        question=q,
                        true_order={k: position[k] for k in evidence},
                        sessions=len({conv.session.get(k, k) for k in evidence}),
                        graphsvc=ours,
                        bm25=theirs,
                    )
                )
                bar.update(1)
    return results


# -- aggregation ---------------------------------------------------------------------------------

SYSTEMS = ("graphsvc", "bm25")


def _outcome(result: Result, system: str) -> Outcome:
    return result.graphsvc if system == "graphsvc" else result.bm25


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
    header = ["category", "n"] + [f"{s} R@{k}" for k in KS for s in ("graphsvc", "bm25")]
    recall = Table(
        "Evidence recall@k (share of a question's evidence in the top k)", header, key="recall_at_k"
    )
    allhit = Table(
        "All-evidence-hit@k (every evidence item in the top k)",
        header,
        key="all_evidence_hit_at_k",
    )
    for label, rs in _groups(_with_evidence(results), categories):
        rows_r: list[Any] = [label, len(rs)]
        rows_a: list[Any] = [label, len(rs)]
        for k in KS:
            for s in SYSTEMS:
                rows_r.append(
                    mean(recall_at_k(_outcome(r, s).ranked, r.question.evidence, k) for r in rs)
                )
                rows_a.append(
                    mean(all_hit_at_k(_outcome(r, s).ranked, r.question.evidence, k) for r in rs)
                )
        recall.rows.append(rows_r)
        allhit.rows.append(rows_a)
    allhit.header = [h.replace("R@", "hit@") for h in header]
    return [recall, allhit]


def packing_table(results: Sequence[Result], categories: Sequence[str]) -> Table:
    header = ["category", "n"] + [f"{s} @{b}" for b in BUDGETS for s in ("graphsvc", "bm25")]
    table = Table(
        "Evidence recall of the packed bundle under a token budget (minScore 0)",
        header,
        note="graphsvc: capsules of `bundle(budgetTokens=B, minScore=0)`; bm25: its top hits "
        "packed greedily with the same estimator and capsule cap.",
        key="packed_recall",
    )
    for label, rs in _groups(_with_evidence(results), categories):
        row: list[Any] = [label, len(rs)]
        for b in BUDGETS:
            for s in SYSTEMS:
                row.append(
                    mean(recall_of(_outcome(r, s).packed[b], r.question.evidence) for r in rs)
                )
        table.rows.append(row)
    tokens: list[Any] = ["median tokens used", len(results)]
    for b in BUDGETS:
        for s in SYSTEMS:
            tokens.append(median([float(_outcome(r, s).tokens[b]) for r in results]))
    table.rows.append(tokens)
    return table


def abstention_signals(results: Sequence[Result]) -> dict[str, tuple[list[float], list[float]]]:
    """Signal -> (positives, negatives), higher meaning "abstain"."""
    pos = [r for r in results if not r.question.answerable]
    neg = [r for r in results if r.question.answerable]
    return {
        "graphsvc -topScore": (
            [-r.graphsvc.top_score for r in pos],
            [-r.graphsvc.top_score for r in neg],
        ),
        "graphsvc 1-coverage": (
            [1 - r.graphsvc.coverage for r in pos],
            [1 - r.graphsvc.coverage for r in neg],
        ),
        "bm25 -top score": ([-r.bm25.top_score for r in pos], [-r.bm25.top_score for r in neg]),
    }


def abstention_tables(
    results: Sequence[Result], categories: Sequence[str], min_score: float, positive_label: str
) -> list[Table]:
    pos = [r for r in results if not r.question.answerable]
    neg = [r for r in results if r.question.answerable]
    signals = abstention_signals(results)
    table = Table(
        f"Abstention ({positive_label} as positives: {len(pos)}; answerable: {len(neg)})",
        ["figure", "graphsvc", "bm25"],
        note="AUROC is threshold-free: the chance an unanswerable question's top score is below an "
        "answerable one's. `skipped` is graphsvc's flag at `--min-score`; bm25 has no absolute "
        "score, so no flag.",
        key="abstention",
    )
    table.rows.append(
        [
            "AUROC of topScore",
            auroc(*signals["graphsvc -topScore"]),
            auroc(*signals["bm25 -top score"]),
        ]
    )
    table.rows.append(["AUROC of evidenceCoverage", auroc(*signals["graphsvc 1-coverage"]), None])
    p, rcl, f1 = precision_recall_f1(
        [bool(r.graphsvc.skipped) for r in results], [not r.question.answerable for r in results]
    )
    table.rows.append([f"precision of skipped (minScore {min_score:g})", p, None])
    table.rows.append([f"recall of skipped (minScore {min_score:g})", rcl, None])
    table.rows.append([f"F1 of skipped (minScore {min_score:g})", f1, None])
    for label, rs in _groups(neg, categories):
        table.rows.append(
            [f"false abstention: {label}", mean(float(bool(r.graphsvc.skipped)) for r in rs), None]
        )
    sweep = Table(
        "graphsvc abstention by minScore (skipped = topScore < minScore)",
        [
            "minScore",
            "recall (unanswerable skipped)",
            "false abstention (answerable)",
            "precision",
            "F1",
        ],
        key="abstention_by_min_score",
    )
    actual = [not r.question.answerable for r in results]
    for t in SWEEP:
        predicted = [r.graphsvc.top_score < t for r in results]
        p, rcl, f1 = precision_recall_f1(predicted, actual)
        far = mean(float(r.graphsvc.top_score < t) for r in neg)
        sweep.rows.append([f"{t:g}", rcl, far, p, f1])
    return [table, sweep]


def chronology_table(results: Sequence[Result], categories: Sequence[str]) -> Table:
    spanning = [r for r in results if r.question.answerable and r.sessions >= 2]
    table = Table(
        f"Chronology: answerable questions whose evidence spans >= 2 sessions ({len(spanning)})",
        ["figure", "graphsvc", "bm25"],
        note="tau: Kendall tau between the rendered order of the evidence capsules (default "
        "budget, minScore 0) and their true order, over questions with >= 2 evidence capsules "
        "rendered. Dates: share of rendered evidence capsules with `occurredAt` / with a "
        "`[YYYY-MM-DD]` prefix in their text.",
        key="chronology",
    )
    taus: dict[str, list[float]] = {}
    for s in SYSTEMS:
        values = []
        for r in spanning:
            packed = _outcome(r, s).packed[DEFAULT_BUDGET]
            tau = kendall_tau(
                [k for k in packed if k in r.true_order],
                {k: float(v) for k, v in r.true_order.items()},
            )
            if not math.isnan(tau):
                values.append(tau)
        taus[s] = values
    chrono = [r for r in spanning if r.graphsvc.chronological]
    table.rows.append(
        ["questions with >= 2 evidence rendered", len(taus["graphsvc"]), len(taus["bm25"])]
    )
    table.rows.append(["mean tau", mean(taus["graphsvc"]), mean(taus["bm25"])])
    table.rows.append(
        [
            "share with tau = 1",
            mean(float(t == 1.0) for t in taus["graphsvc"]),
            mean(float(t == 1.0) for t in taus["bm25"]),
        ]
    )
    table.rows.append(
        [
            "share rendered chronologically",
            mean(float(r.graphsvc.chronological) for r in spanning),
            0.0,
        ]
    )
    chrono_taus = []
    for r in chrono:
        packed = r.graphsvc.packed[DEFAULT_BUDGET]
        tau = kendall_tau(
            [k for k in packed if k in r.true_order], {k: float(v) for k, v in r.true_order.items()}
        )
        if not math.isnan(tau):
            chrono_taus.append(tau)
    table.rows.append(["mean tau when rendered chronologically", mean(chrono_taus), None])
    table.rows.append(
        [
            "dates carried (occurredAt)",
            mean(float(d) for r in spanning for d in r.graphsvc.dated_field),
            0.0,
        ]
    )
    table.rows.append(
        [
            "dates carried (in the text)",
            mean(float(d) for r in spanning for d in r.graphsvc.dated_text),
            0.0,
        ]
    )
    return table


def update_table(results: Sequence[Result]) -> Table | None:
    updates = [r for r in results if r.question.updated and r.question.original]
    if not updates:
        return None
    table = Table(
        f"Knowledge updates ({len(updates)} questions)",
        ["figure", "graphsvc", "bm25"],
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
        for s in SYSTEMS:
            values = []
            for r in updates:
                ranked = _outcome(r, s).ranked
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


def timing_table(results: Sequence[Result]) -> Table:
    table = Table(
        "Latency per question",
        ["figure", "graphsvc", "bm25"],
        note="graphsvc: one bundle call at the default budget; bm25: one bm25s query.",
        key="latency",
    )
    table.rows.append(
        [
            "p50 (ms)",
            median([r.graphsvc.seconds * 1000 for r in results]),
            median([r.bm25.seconds * 1000 for r in results]),
        ]
    )
    table.rows.append(
        [
            "p95 (ms)",
            _p95([r.graphsvc.seconds * 1000 for r in results]),
            _p95([r.bm25.seconds * 1000 for r in results]),
        ]
    )
    return table


def _p95(values: list[float]) -> float:
    return percentile(values, 95)


def plots(results: Sequence[Result], categories: Sequence[str]) -> list[Plot]:
    answerable = _with_evidence([r for r in results if r.question.answerable])
    curves = [
        Curve(
            s,
            list(CURVE_KS),
            [
                mean(recall_at_k(_outcome(r, s).ranked, r.question.evidence, k) for r in answerable)
                for k in CURVE_KS
            ],
            dashed=s == "bm25",
        )
        for s in SYSTEMS
    ]
    by_category = []
    for color, c in enumerate(categories):
        rs = _with_evidence(
            [r for r in results if r.question.category == c and r.question.answerable]
        )
        if not rs:
            continue
        for s in SYSTEMS:
            ys = [
                mean(recall_at_k(_outcome(r, s).ranked, r.question.evidence, k) for r in rs)
                for k in CURVE_KS
            ]
            by_category.append(
                Curve(f"{s} {c}", list(CURVE_KS), ys, dashed=s == "bm25", color=color % 10)
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


def figures(results: Sequence[Result], tables: Sequence[Table]) -> dict[str, Any]:
    """Machine-readable figures: every table's cells by title."""
    out: dict[str, Any] = {"questions": len(results)}
    for table in tables:
        out[table.key or table.title] = {
            str(row[0]): dict(zip(table.header[1:], row[1:], strict=True)) for row in table.rows
        }
    return out


def write_questions(results: Sequence[Result], path: Path) -> None:
    """One JSON line per question: evidence ranks and packing of both systems (for analysis)."""
    with path.open("w", encoding="utf-8") as handle:
        for r in results:
            row: dict[str, Any] = {"question": asdict(r.question), "sessions": r.sessions}
            for s in SYSTEMS:
                o = _outcome(r, s)
                row[s] = {
                    "evidence_ranks": [first_rank(o.ranked, [k]) for k in r.question.evidence],
                    "top5": o.ranked[:5],
                    "packed1000": o.packed[DEFAULT_BUDGET],
                    "top_score": o.top_score,
                    "skipped": o.skipped,
                    "coverage": o.coverage,
                }
            handle.write(
                json.dumps(row, ensure_ascii=False, default=str).replace("Infinity", "null") + "\n"
            )


def build_report(
    dataset: str,
    preamble: list[str],
    results: Sequence[Result],
    categories: Sequence[str],
    min_score: float,
    positive_label: str,
) -> Report:
    tables = recall_tables(results, categories)
    tables.append(packing_table(results, categories))
    if any(not r.question.answerable for r in results) and any(
        r.question.answerable for r in results
    ):
        tables += abstention_tables(results, categories, min_score, positive_label)
    tables.append(chronology_table(results, categories))
    updates = update_table(results)
    if updates is not None:
        tables.append(updates)
    timings = [timing_table(results)]
    return Report(
        dataset, preamble, tables, plots(results, categories), figures(results, tables), timings
    )


__all__ = [
    "Conversation",
    "Outcome",
    "Question",
    "Result",
    "build_report",
    "run_questions",
    "write_questions",
]
