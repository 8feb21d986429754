"""``graphsvc eval``: the quality evaluation on public benchmark data, beside a bm25s baseline.

Each subcommand loads a dataset through the ingest path users have, into fresh namespaces of the
configured store (Neo4j when ``GRAPHSVC_NEO4J_URI`` is set, else a temporary embedded store), asks
its questions of every system side by side (LoCoMo and BEAM: bm25s, dense-only, lexical-only and
hybrid graphsvc, and for LoCoMo graphsvc on plain turns; see :mod:`graphsvc_lab.eval.qa`),
prints the tables and writes ``report.md``, ``figures.json``, ``speed.json``,
``questions.jsonl`` (LoCoMo, BEAM) and PNG plots to ``--out``. Everything but the store, the
namespaces and the latency (the report's last section and ``speed.json``) is deterministic.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from graphsvc.cli.common import TEMPORARY_DATA_DIR_HELP, data_dir_flag
from graphsvc.errors import GraphsvcError
from graphsvc.recall import STAGES
from graphsvc_lab.datasets import eval_data_root
from graphsvc_lab.eval.answerability import answerability
from graphsvc_lab.eval.beam import beam_conversations
from graphsvc_lab.eval.chunks import chunks
from graphsvc_lab.eval.common import (
    SETTINGS_TUNABLE,
    TUNABLE,
    RunContext,
    TuneRequest,
    describe_tuning,
    parse_tune,
    run_context,
    tuning_value,
)
from graphsvc_lab.eval.crossval import crossval_tables
from graphsvc_lab.eval.encoders import encoders
from graphsvc_lab.eval.esc import build_esc_report, run_esc
from graphsvc_lab.eval.joint import joint
from graphsvc_lab.eval.locomo import CATEGORIES, locomo_conversations
from graphsvc_lab.eval.qa import (
    DEFAULT_STAGE,
    Conversation,
    build_report,
    run_questions,
    write_questions,
)
from graphsvc_lab.eval.report import Report, write_report
from graphsvc_lab.eval.unrelated import unrelated

F = TypeVar("F", bound=Callable[..., Any])

# The abstention threshold of the evaluation (bundle's own default minScore is 0: never abstain).
DEFAULT_MIN_SCORE = 0.3


def _common(dataset: str, data_help: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        options = [
            click.option(
                "--data",
                "data",
                type=click.Path(exists=True, path_type=Path),
                default=None,
                help=data_help,
            ),
            click.option(
                "--out",
                type=click.Path(file_okay=False, path_type=Path),
                default=None,
                help=f"Report folder (default: eval-out/{dataset}/).",
            ),
            click.option(
                "--limit",
                type=click.IntRange(min=1),
                default=None,
                help="At most this many questions per conversation (ESC: query events).",
            ),
            click.option(
                "--only",
                multiple=True,
                help="Only this conversation / chat / document (repeatable).",
            ),
            click.option(
                "--tune",
                "tuning",
                multiple=True,
                callback=_parse_tune,
                metavar="NAME=VALUE[,VALUE...]",
                help="Run with a recall constant or fusion setting changed, to measure a feature "
                f"on and off (repeatable; NAME one of {', '.join((*TUNABLE, *SETTINGS_TUNABLE))}; "
                "ANSWER_SHARE=0 turns answer inheritance off). Several values (dense_weight=0.1,"
                "0.2,0.3) measure each and choose one by leave-one-conversation-out "
                "cross-validation (LoCoMo, BEAM). Recorded in the report.",
            ),
            click.option(
                "--embed",
                type=click.Choice(["auto", "on", "off"]),
                default=None,
                help="Dense recall: the dense-only baseline and hybrid graphsvc beside "
                "lexical-only graphsvc (default GRAPHSVC_EMBED; auto: when the model is "
                "installed; off: lexical only, as without the model).",
            ),
            click.option(
                "--vector-cache",
                type=click.Path(file_okay=False, path_type=Path),
                default=None,
                help="Where sentence vectors are cached, by model id and text sha256 (default: "
                "<out>/vector-cache). Reruns read them back instead of embedding again.",
            ),
            data_dir_flag(TEMPORARY_DATA_DIR_HELP),
        ]
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def _parse_tune(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> TuneRequest:
    try:
        return parse_tune(values)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _min_score_option(func: F) -> F:
    return click.option(
        "--min-score",
        type=click.FloatRange(0.0, 1.0),
        default=DEFAULT_MIN_SCORE,
        show_default=True,
        help="Abstention threshold: bundles below it are skipped.",
    )(func)


def _stage_option(func: F) -> F:
    return click.option(
        "--stage",
        type=click.Choice(sorted(STAGES)),
        default=DEFAULT_STAGE,
        show_default=True,
        help="Scoring stage of every bundle (abstention thresholds are chosen per stage).",
    )(func)


def _foreign_option(func: F) -> F:
    return click.option(
        "--foreign",
        type=click.FloatRange(0.0, 1.0),
        default=0.0,
        show_default=True,
        help="Also ask each conversation this share of its question count of the next "
        "conversation's questions (unanswerable there: a negative control for "
        "`graphsvc eval answerability fit`); they take part in no other figure.",
    )(func)


def _plain_option(default: bool) -> Callable[[F], F]:
    return click.option(
        "--plain/--no-plain",
        default=default,
        show_default=True,
        help="Also load the memories as a chat application writes them (the converter's rows "
        "without its PRECEDES links; tags kept) and run lexical and hybrid graphsvc on them.",
    )


@click.group("eval")
def eval_group() -> None:
    """Measure recall, abstention, chronology and causal reconstruction on public data, beside a
    bm25s baseline on the same memories (datasets from GRAPHSVC_EVAL_DATA by default)."""


def _environment(ctx: RunContext, namespaces: str) -> list[str]:
    """What differs between runs: where the data went, and how many vectors the cache had."""
    lines = [f"- store: {ctx.store}", f"- namespace(s): {namespaces}"]
    if ctx.embedder is not None:
        lines.append(
            f"- vector cache {ctx.embedder.path}: {ctx.embedder.hits} vectors read back, "
            f"{ctx.embedder.misses} embedded"
        )
    return lines


def _preamble(what: str, extra: list[str], request: TuneRequest) -> list[str]:
    lines = [
        f"- data: {what}",
        f"- graphsvc {_version()}, Python {platform.python_version()}; baseline bm25s "
        f"{_bm25s_version()} (Snowball English stems, English stop words)",
        f"- recall constants changed with --tune: {describe_tuning(request.fixed)}",
    ]
    if request.sweep:
        swept = "; ".join(
            f"{name} in {', '.join(f'{v:g}' if isinstance(v, float) else str(v) for v in values)}"
            for name, values in request.sweep
        )
        lines.append(f"- swept with --tune (leave-one-conversation-out): {swept}")
    return lines + extra


def _systems(ctx: RunContext) -> list[str]:
    """What each system of the run is."""
    settings = ctx.default.settings
    lines = ["- bm25: bm25s over the memory texts"]
    if ctx.embedder is not None:
        lines.append(
            f"- dense: cosine of the query with every memory, {ctx.embedder.model_id} "
            f"({ctx.embedder.dimension}-d, int8 codes as the stores keep them)"
        )
    lines.append("- lexical: graphsvc without an embedder (GRAPHSVC_EMBED=off)")
    if ctx.hybrid is not None:
        lines.append(
            f"- hybrid: graphsvc with the embedder, dense_weight {settings.dense_weight:g}, "
            f"dense_k {settings.dense_k}"
        )
    lines += [f"- {note}" for note in ctx.notes]
    return lines


def _version() -> str:
    from importlib.metadata import version

    try:
        return version("graphsvc")
    except Exception:  # pragma: no cover - not installed
        return "(source)"


def _bm25s_version() -> str:
    from importlib.metadata import version

    try:
        return version("bm25s")
    except Exception:  # pragma: no cover
        return "?"


def _finish(report: Report, out: Path) -> None:
    path = write_report(report, out)
    click.echo(report.text())
    click.echo(f"\nreport written to {path}")


def _run(action: Callable[[], None]) -> None:
    try:
        import bm25s  # noqa: F401 - the baseline; checked before any loading
    except ImportError:
        raise click.ClickException(
            "the baseline needs bm25s: pip install -e lab (graphsvc-lab's dependencies)"
        ) from None
    try:
        action()
    except GraphsvcError as exc:
        raise click.ClickException(str(exc)) from exc
    except ValidationError as exc:
        raise click.ClickException(f"invalid settings: {exc}") from exc


def _cache(out: Path, vector_cache: Path | None) -> Path:
    return vector_cache if vector_cache is not None else out / "vector-cache"


def run_qa_eval(
    dataset: str,
    label: str,
    load: Callable[[RunContext], list[Conversation]],
    categories: list[str] | None,
    positive_label: str,
    out: Path,
    limit: int | None,
    min_score: float,
    data_dir: Path | None,
    request: TuneRequest,
    *,
    embed: str | None = "off",
    vector_cache: Path | None = None,
    plain: bool = False,
    stage: str = DEFAULT_STAGE,
    foreign: float = 0.0,
) -> Report:
    """Run a question-answering evaluation end to end and write its report."""
    fixed = request.fixed
    with run_context(
        data_dir, embed=embed, vector_cache=_cache(out, vector_cache), tuning=fixed
    ) as ctx:
        conversations = load(ctx)
        configs = request.configs()
        results = run_questions(
            ctx,
            dataset,
            conversations,
            min_score,
            limit,
            plain=plain,
            configs=configs,
            stage=stage,
            foreign=foreign,
        )
        memories = sum(sum(1 for r in c.rows if r["type"] == "memory") for c in conversations)
        environment = _environment(ctx, f"{ctx.namespace(dataset)}_<n>_<system>")
        reference = " ".join(
            f"{name}={tuning_value(ctx.default.policy, name)!r}" for name, _ in request.sweep
        )
        preamble = _preamble(
            label,
            [
                f"- {len(conversations)} conversation(s), {memories} memories (one per turn or "
                f"message), "
                f"{len(results)} questions"
                + (f" (at most {limit} per conversation)" if limit else ""),
                f"- abstention threshold: --min-score {min_score:g}; scoring stage: {stage}",
                "- ranking = the bundle's ranked window (capsules + excluded at minScore 0) by "
                "score, then recordedAt (newest first), then id; see `lab/graphsvc_lab/eval/qa.py`",
                *_systems(ctx),
            ]
            + (
                [
                    "- plain lexical / plain hybrid: the same memories written as a chat "
                    "application writes them (the converter's rows without its PRECEDES links, "
                    "tags kept)"
                ]
                if plain
                else []
            ),
            request,
        )
    if categories is None:
        categories = sorted({q.category for c in conversations for q in c.questions})
    own = [r for r in results if not r.question.foreign]
    extra = crossval_tables(own, categories, min_score, f"{reference} (as run)")
    report = build_report(dataset, preamble, results, categories, min_score, positive_label, extra)
    report.figures["tuned"] = dict(sorted(fixed.items()))
    if request.sweep:
        report.figures["swept"] = {name: list(values) for name, values in request.sweep}
    report.environment = environment
    out.mkdir(parents=True, exist_ok=True)
    write_questions(results, out / "questions.jsonl")
    return report


@eval_group.command("locomo")
@_common("locomo", "LoCoMo JSON file (default: $GRAPHSVC_EVAL_DATA/locomo/locomo_dev.json).")
@_min_score_option
@_stage_option
@_plain_option(True)
@_foreign_option
def locomo(
    data: Path | None,
    out: Path | None,
    limit: int | None,
    only: tuple[str, ...],
    data_dir: Path | None,
    tuning: TuneRequest,
    embed: str | None,
    vector_cache: Path | None,
    min_score: float,
    stage: str,
    plain: bool,
    foreign: float,
) -> None:
    """LoCoMo: evidence recall, abstention (category 5), chronology; bm25, dense-only, lexical
    and hybrid graphsvc side by side, and graphsvc on plain turns (no converter links). --only
    takes a sample_id (conv-26) or a 0-based index."""
    path = data or eval_data_root() / "locomo" / "locomo_dev.json"
    target = out or Path("eval-out") / "locomo"

    def action() -> None:
        report = run_qa_eval(
            "locomo",
            str(path),
            lambda ctx: locomo_conversations(path, only, ctx.run_id),
            list(CATEGORIES.values()),
            "category 5 (adversarial)",
            target,
            limit,
            min_score,
            data_dir,
            tuning,
            embed=embed,
            vector_cache=vector_cache,
            plain=plain,
            stage=stage,
            foreign=foreign,
        )
        _finish(report, target)

    _run(action)


@eval_group.command("beam")
@_common("beam", "BEAM folder of chats (default: $GRAPHSVC_EVAL_DATA/beam/100K).")
@_min_score_option
@_stage_option
@_plain_option(False)
@_foreign_option
def beam(
    data: Path | None,
    out: Path | None,
    limit: int | None,
    only: tuple[str, ...],
    data_dir: Path | None,
    tuning: TuneRequest,
    embed: str | None,
    vector_cache: Path | None,
    min_score: float,
    stage: str,
    plain: bool,
    foreign: float,
) -> None:
    """BEAM: evidence recall by ability, abstention, event ordering, knowledge updates; bm25,
    dense-only, lexical and hybrid graphsvc side by side. --only takes a chat folder name
    (1..20)."""
    path = data or eval_data_root() / "beam" / "100K"
    target = out or Path("eval-out") / "beam"

    def action() -> None:
        def load(ctx: RunContext) -> list[Conversation]:
            return beam_conversations(path, only, ctx.run_id, ctx.service.settings.max_text_chars)

        report = run_qa_eval(
            "beam",
            str(path),
            load,
            None,
            "abstention questions",
            target,
            limit,
            min_score,
            data_dir,
            tuning,
            embed=embed,
            vector_cache=vector_cache,
            plain=plain,
            stage=stage,
            foreign=foreign,
        )
        _finish(report, target)

    _run(action)


@eval_group.command("esc")
@_common(
    "esc",
    "EventStoryLine JSONL (default: $GRAPHSVC_EVAL_DATA/esc/eventstoryline_v1.5_normalized.jsonl).",
)
@click.option(
    "--k", type=click.IntRange(min=1), default=5, show_default=True, help="Reconstruct hits."
)
@click.option(
    "--depth",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Reconstruct walk depth (and the depth gold neighbourhoods are taken to).",
)
def esc(
    data: Path | None,
    out: Path | None,
    limit: int | None,
    only: tuple[str, ...],
    data_dir: Path | None,
    tuning: TuneRequest,
    embed: str | None,
    vector_cache: Path | None,
    k: int,
    depth: int,
) -> None:
    """EventStoryLine: recall and precision of reconstruct's causal ancestors and descendants
    (on hybrid graphsvc when the embedding model is there, else lexical). --only takes a document
    name or a topic number."""
    path = data or eval_data_root() / "esc" / "eventstoryline_v1.5_normalized.jsonl"
    target = out or Path("eval-out") / "esc"
    if tuning.sweep:
        raise click.BadParameter(
            "esc takes one value per name (lists are for locomo and beam)", param_hint="--tune"
        )
    fixed = tuning.fixed

    def action() -> None:
        with run_context(
            data_dir, embed=embed, vector_cache=_cache(target, vector_cache), tuning=fixed
        ) as ctx:
            results, memories, links = run_esc(ctx, path, only, limit, k, depth)
            preamble = _preamble(
                str(path),
                [
                    f"- {memories} memories (one per event), {links} CAUSES links, one "
                    f"namespace; {len(results)} query events; reconstruct k={k}, depth={depth}",
                    "- graphsvc: "
                    + ("hybrid (with the embedder)" if ctx.hybrid else "lexical (no embedder)"),
                    *(f"- {note}" for note in ctx.notes),
                ],
                tuning,
            )
            environment = _environment(ctx, ctx.namespace("esc"))
        report = build_esc_report(preamble, results, depth)
        report.figures["tuned"] = dict(sorted(fixed.items()))
        report.environment = environment
        _finish(report, target)

    _run(action)


eval_group.add_command(chunks)
eval_group.add_command(joint)
eval_group.add_command(answerability)
eval_group.add_command(unrelated)
eval_group.add_command(encoders)

__all__ = ["DEFAULT_MIN_SCORE", "eval_group"]
