"""The ``graphsvc`` command line.

Every command takes ``--data-dir`` and ``--namespace`` and uses Neo4j when ``GRAPHSVC_NEO4J_URI``
is set, the embedded store otherwise. Exit status: 0 success, 2 bad input (the message says what
to fix), 3 the store is unavailable or another error.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import click
from pydantic import ValidationError
from tqdm import tqdm

from graphsvc.bootstrap import bootstrap, store_label
from graphsvc.datasets import esc_rows, load_esc, load_locomo, locomo_rows
from graphsvc.errors import (
    BadInputError,
    GraphsvcError,
    LimitExceededError,
    NotFoundError,
    validation_message,
)
from graphsvc.ingest import export_lines, ingest, parse_jsonl
from graphsvc.model import ContextBundle, LinkInput, LinkKind, MemoryInput, ReconstructedBelief
from graphsvc.service import MemoryService
from graphsvc.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])

BAD_INPUT_EXIT = 2
UNAVAILABLE_EXIT = 3

DEMO_ORDER_QUESTION = "What happened before and after the checkout payment timeouts?"
DEMO_CUE = "Why did customers see payment timeouts at checkout?"


def common_options(func: F) -> F:
    """``--data-dir`` and ``--namespace``, on every command."""
    func = click.option(
        "--namespace",
        default=None,
        help="Namespace to use (default: GRAPHSVC_NAMESPACE or 'default').",
    )(func)
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Embedded store folder (default: GRAPHSVC_DATA_DIR or ~/.local/share/graphsvc).",
    )(func)


def make_settings(data_dir: Path | None, namespace: str | None) -> Settings:
    """Settings from the environment, with the command line's overrides."""
    overrides: dict[str, Any] = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if namespace is not None:
        overrides["namespace"] = namespace
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise BadInputError(f"invalid settings: {validation_message(exc)}") from exc


@contextmanager
def opened(
    data_dir: Path | None, namespace: str | None, *, read_only: bool = False
) -> Iterator[tuple[MemoryService, str]]:
    """A service on the configured store and the namespace to use; closed afterwards."""
    settings = make_settings(data_dir, namespace)
    service = bootstrap(settings, read_only=read_only)
    try:
        yield service, settings.namespace
    finally:
        service.store.close()


def fail(exc: GraphsvcError) -> None:
    """Print a graphsvc error and exit with its status."""
    click.echo(f"error: {exc}", err=True)
    bad = isinstance(exc, BadInputError | NotFoundError | LimitExceededError)
    sys.exit(BAD_INPUT_EXIT if bad else UNAVAILABLE_EXIT)


class GraphsvcGroup(click.Group):
    """Turns graphsvc errors into a message and an exit status instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphsvcError as exc:
            fail(exc)
        except ValidationError as exc:
            fail(BadInputError(validation_message(exc)))
        return None


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@click.group(cls=GraphsvcGroup)
@click.version_option(package_name="graphsvc")
def cli() -> None:
    """graphsvc: memory for LLM agents, on a graph.

    Uses Neo4j when GRAPHSVC_NEO4J_URI is set, the embedded store otherwise.
    """


# -- output for people -------------------------------------------------------------------------


def _short(text: str, width: int = 88) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_bundle(bundle: ContextBundle) -> None:
    """A bundle, readably."""
    click.secho(f'Bundle for "{bundle.query}"', bold=True)
    flags = ["chronological (oldest first)" if bundle.chronological else "best match first"]
    if bundle.skipped:
        flags = ["SKIPPED: top score below minScore"]
    click.echo(
        f"  stage {bundle.stage} · top score {bundle.top_score:.3f} (min {bundle.min_score:.2f})"
        f" · coverage {bundle.evidence_coverage:.3f} · {bundle.used_tokens}/"
        f"{bundle.budget_tokens} tokens · {', '.join(flags)}"
    )
    if bundle.capsules:
        click.echo(f"  {'#':>2}  {'score':>5}  {'tok':>3}  text")
        for i, capsule in enumerate(bundle.capsules, start=1):
            click.echo(
                f"  {i:>2}  {capsule.score:.3f}  {capsule.tokens:>3}  {_short(capsule.text)}"
            )
    if bundle.excluded:
        reasons = Counter(c.reason for c in bundle.excluded)
        summary = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda x: str(x[0])))
        click.echo(f"  excluded: {len(bundle.excluded)} ({summary})")
    if bundle.uncovered_terms:
        click.echo(f"  not covered by memory: {', '.join(bundle.uncovered_terms)}")
    click.secho("\n  rendered for the prompt:", dim=True)
    for line in bundle.rendered.splitlines():
        click.echo(f"  | {line}")


def print_belief(belief: ReconstructedBelief) -> None:
    """A belief, readably."""
    click.secho(f'Reconstructed belief for "{belief.cue}"', bold=True)
    click.echo(
        f"  confidence {belief.confidence:.3f} · {len(belief.source_ids)} source(s) · "
        f"{len(belief.linked_context_ids)} linked"
        + (f" · stored as belief {belief.belief_id}" if belief.belief_id else "")
    )
    for line in belief.summary.splitlines():
        click.echo(f"  | {line}")


# -- commands ----------------------------------------------------------------------------------


def demo_lines() -> list[str]:
    """The demo dataset that ships with the package: a checkout outage with its causal chain."""
    path = resources.files("graphsvc").joinpath("data/demo.jsonl")
    return path.read_text(encoding="utf-8").splitlines()


@cli.command()
@common_options
def demo(data_dir: Path | None, namespace: str | None) -> None:
    """Load the demo dataset into a fresh data dir; show a bundle and a belief."""
    temporary = None
    if data_dir is None and not make_settings(None, namespace).neo4j_uri:
        temporary = Path(tempfile.mkdtemp(prefix="graphsvc-demo-"))
        data_dir = temporary
    try:
        with opened(data_dir, namespace) as (service, ns):
            click.echo(f"graphsvc demo on the {store_label(service.settings)}, namespace {ns!r}")
            plan = parse_jsonl(demo_lines(), "demo.jsonl")
            report = ingest(service, ns, plan, name="demo.jsonl", progress=False)
            click.echo(
                f"loaded {report.memories_created} memories ({report.memories_unchanged} already "
                f"there) and {report.links} links: a checkout outage and its causes\n"
            )
            print_bundle(service.bundle(ns, DEMO_ORDER_QUESTION, budget_tokens=220))
            click.echo()
            print_belief(service.reconstruct(ns, DEMO_CUE, k=3, depth=2))
            click.echo(
                "\nTry your own: graphsvc bundle QUERY / graphsvc reconstruct CUE"
                + (f" --data-dir {data_dir}" if data_dir and not temporary else "")
            )
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


@cli.command("ingest")
@common_options
@click.argument("file", type=click.File("r", encoding="utf-8"))
def ingest_command(file: Any, data_dir: Path | None, namespace: str | None) -> None:
    """Write memories and links from a JSON Lines FILE ('-' for stdin).

    The whole file is validated first (errors name the line; nothing is written). Writes are
    idempotent, so an interrupted ingest is resumed by running it again.
    """
    name = getattr(file, "name", "<stdin>")
    plan = parse_jsonl(file, name)
    with opened(data_dir, namespace) as (service, ns):
        report = ingest(service, ns, plan, name=name)
        click.echo(
            f"ingested {name} into {ns!r}: {report.memories_created} memories created, "
            f"{report.memories_unchanged} unchanged, {report.links} links, "
            f"{report.evicted} evicted"
        )


@cli.command("import")
@common_options
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.pass_context
def import_command(
    ctx: click.Context, file: Any, data_dir: Path | None, namespace: str | None
) -> None:
    """Import a JSON Lines FILE written by ``graphsvc export`` (same as ingest)."""
    ctx.invoke(ingest_command, file=file, data_dir=data_dir, namespace=namespace)


@cli.command("export")
@common_options
@click.argument("file", type=click.File("w", encoding="utf-8"), default="-")
def export_command(file: Any, data_dir: Path | None, namespace: str | None) -> None:
    """Write the namespace as JSON Lines to FILE (default stdout), ready for ``import``."""
    with opened(data_dir, namespace, read_only=True) as (service, ns):
        counts = service.stats(ns)
        count = 0
        with tqdm(
            total=counts.memories + counts.links, unit="row", disable=not sys.stderr.isatty()
        ) as bar:
            for line in export_lines(service, ns):
                file.write(line)
                count += 1
                bar.update()
        click.echo(f"exported {count} rows from {ns!r}", err=True)


@cli.command()
@common_options
@click.argument("query")
@click.option("--budget", type=int, default=None, help="Token budget (default 1000).")
@click.option("--min-score", type=float, default=None, help="Abstain below this top score.")
@click.option("--max-capsules", type=int, default=None, help="Most capsules to pack.")
@click.option("--stage", default=None, help="Scoring stage: default, recent or exact.")
@click.option("--json", "as_json", is_flag=True, help="Print the ContextBundle as JSON.")
def bundle(
    query: str,
    budget: int | None,
    min_score: float | None,
    max_capsules: int | None,
    stage: str | None,
    as_json: bool,
    data_dir: Path | None,
    namespace: str | None,
) -> None:
    """What memory offers a prompt for QUERY, under a token budget."""
    with opened(data_dir, namespace, read_only=True) as (service, ns):
        result = service.bundle(
            ns, query, budget_tokens=budget, stage=stage, min_score=min_score,
            max_capsules=max_capsules,
        )  # fmt: skip
    if as_json:
        emit_json(result.to_json_dict())
    else:
        print_bundle(result)


@cli.command()
@common_options
@click.argument("cue")
@click.option("--k", type=int, default=None, help="How many direct hits (default 5).")
@click.option("--depth", type=int, default=None, help="Walk depth in hops (default 2).")
@click.option("--save", is_flag=True, help="Store the belief, linked to its sources.")
@click.option("--run-id", default=None, help="With --save: record a memory_recall event.")
@click.option("--json", "as_json", is_flag=True, help="Print the ReconstructedBelief as JSON.")
def reconstruct(
    cue: str,
    k: int | None,
    depth: int | None,
    save: bool,
    run_id: str | None,
    as_json: bool,
    data_dir: Path | None,
    namespace: str | None,
) -> None:
    """The belief memory supports about CUE: top hits plus the causal context around them."""
    with opened(data_dir, namespace, read_only=not save) as (service, ns):
        if save:
            result = service.reconstruct_and_store(ns, cue, k=k, depth=depth, run_id=run_id)
        else:
            result = service.reconstruct(ns, cue, k=k, depth=depth)
    if as_json:
        emit_json(result.to_json_dict())
    else:
        print_belief(result)


@cli.command()
@common_options
@click.argument("text")
@click.option("--kind", default="observation", show_default=True)
@click.option("--occurred-at", default=None, help="ISO-8601 time the thing happened.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--source", default=None, help="Where the memory came from.")
@click.option("--id", "memory_id", default=None, help="Explicit UUID (default: from content).")
@click.option("--json", "as_json", is_flag=True)
def remember(
    text: str,
    kind: str,
    occurred_at: str | None,
    tags: tuple[str, ...],
    source: str | None,
    memory_id: str | None,
    as_json: bool,
    data_dir: Path | None,
    namespace: str | None,
) -> None:
    """Write one memory."""
    item = MemoryInput.model_validate(
        {"id": memory_id, "text": text, "kind": kind, "occurredAt": occurred_at,
         "tags": list(tags), "source": source}
    )  # fmt: skip
    with opened(data_dir, namespace) as (service, ns):
        memory = service.remember(ns, item)
    if as_json:
        emit_json(memory.to_json_dict())
    else:
        click.echo(f"remembered {memory.id} ({memory.tokens} tokens)")


@cli.command()
@common_options
@click.argument("source")
@click.argument("target")
@click.argument("kind", type=click.Choice([k.value for k in LinkKind]))
@click.option("--weight", type=float, default=1.0, show_default=True)
@click.option("--note", default=None)
def link(
    source: str,
    target: str,
    kind: str,
    weight: float,
    note: str | None,
    data_dir: Path | None,
    namespace: str | None,
) -> None:
    """Link memory SOURCE to TARGET with KIND."""
    item = LinkInput.model_validate(
        {"source": source, "target": target, "kind": kind, "weight": weight, "note": note}
    )
    with opened(data_dir, namespace) as (service, ns):
        made = service.link(ns, item)
    click.echo(f"linked {made.source} -[{made.kind.value}]-> {made.target}")


@cli.command()
@common_options
@click.argument("memory_id")
@click.option("--json", "as_json", is_flag=True)
def forget(memory_id: str, as_json: bool, data_dir: Path | None, namespace: str | None) -> None:
    """Remove a memory, its links and the beliefs built on it."""
    try:
        parsed = UUID(memory_id)
    except ValueError:
        raise BadInputError(f"invalid memory id {memory_id!r}: expected a UUID") from None
    with opened(data_dir, namespace) as (service, ns):
        receipt = service.forget(ns, parsed)
    if as_json:
        emit_json(receipt.to_json_dict())
    else:
        click.echo(
            f"forgot {receipt.memory_id}: {len(receipt.removed_links)} link(s) and "
            f"{len(receipt.removed_belief_ids)} belief(s) removed"
        )


@cli.command()
@common_options
@click.option("--json", "as_json", is_flag=True)
def stats(as_json: bool, data_dir: Path | None, namespace: str | None) -> None:
    """Counts for the namespace."""
    with opened(data_dir, namespace, read_only=True) as (service, ns):
        result = service.stats(ns)
        label = store_label(service.settings)
    if as_json:
        emit_json(result.to_json_dict())
    else:
        click.echo(f"{label}, namespace {ns!r}")
        for key, value in result.to_json_dict().items():
            if key != "namespace":
                click.echo(f"  {key:<9} {value}")


@cli.command()
@click.argument("dataset", type=click.Choice(["locomo", "esc"]))
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--only", default=None, help="Only this LoCoMo sample index (0-based) or ESC doc.")
@click.option(
    "--scope",
    default="",
    help="Salt for the memory ids, to load the same data twice (ids are unique across namespaces).",
)
def convert(dataset: str, path: Path, only: str | None, scope: str) -> None:
    """Print a public dataset file (LoCoMo JSON, EventStoryLine JSONL) as ingest JSON Lines."""
    if dataset == "locomo":
        conversations = load_locomo(path)
        for index, conversation in enumerate(conversations):
            if only is None or only == str(index):
                for row in locomo_rows(
                    conversation, str(conversation.get("sample_id", index)), scope
                ):
                    click.echo(json.dumps(row, ensure_ascii=False))
    else:
        for document in load_esc(path):
            if only is None or only == document["doc"]:
                for row in esc_rows(document, scope):
                    click.echo(json.dumps(row, ensure_ascii=False))


def _register_optional() -> None:
    from graphsvc.api.bench_http import bench_http
    from graphsvc.api.export import export_schema
    from graphsvc.api.serve import serve
    from graphsvc.bench import bench
    from graphsvc.drift import drift
    from graphsvc.eval import eval_group

    cli.add_command(bench)
    cli.add_command(eval_group)
    cli.add_command(drift)
    cli.add_command(bench_http)
    cli.add_command(export_schema)
    cli.add_command(serve)


_register_optional()


def main() -> None:
    """Entry point of the ``graphsvc`` console script."""
    cli(prog_name="graphsvc")


if __name__ == "__main__":
    main()
