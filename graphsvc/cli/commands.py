"""The store commands: demo, ingest, import, export, bundle, reconstruct, remember, link, forget,
stats. Each opens the configured store (``GRAPHSVC_NEO4J_URI``: Neo4j; else the embedded store in
``--data-dir``) for the call and closes it."""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any
from uuid import UUID

import click
from tqdm import tqdm

from graphsvc.bootstrap import store_label
from graphsvc.cli.common import common_options, emit_json, make_settings, opened
from graphsvc.cli.embed import vectors_after_write
from graphsvc.cli.output import print_belief, print_bundle
from graphsvc.cli.requests import request_of, request_options
from graphsvc.errors import BadInputError
from graphsvc.ingest import export_lines, ingest, parse_jsonl
from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.requests import BundleQuery, ReconstructQuery

DEMO_ORDER_QUESTION = "What happened before and after the checkout payment timeouts?"
DEMO_CUE = "Why did customers see payment timeouts at checkout?"


def demo_lines() -> list[str]:
    """The demo dataset that ships with the package: a checkout outage with its causal chain."""
    path = resources.files("graphsvc").joinpath("data/demo.jsonl")
    return path.read_text(encoding="utf-8").splitlines()


@click.command()
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
            vectors_after_write(service, ns, wait=True, show=False, quiet=True)
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


_WRITERS_HELP = (
    "Memory batches in flight at once on Neo4j, whose server then works on several "
    "transactions (the embedded store writes one at a time). Each batch stays atomic and is "
    "recorded in file order; a file that could reach the namespace's memory cap is written "
    "with one."
)
writers_option = click.option(
    "--writers",
    type=click.IntRange(min=1, max=8),
    default=2,
    show_default=True,
    help=_WRITERS_HELP,
)


embed_option = click.option(
    "--embed/--no-embed",
    default=True,
    show_default=True,
    help="With dense recall on, encode the vectors of the memories written (they wait in the "
    "vector queue once the write is acknowledged) here, with a progress bar, unless a server "
    "runs the store's vector queue; --no-embed leaves them to a server or `graphsvc embed`.",
)


# Files are read as bytes and decoded line by line (graphsvc.ingest.parse_jsonl), so that a file
# that is not UTF-8 is refused naming its line, like any other bad line.
@click.command("ingest")
@common_options
@writers_option
@embed_option
@click.argument("file", type=click.File("rb"))
def ingest_command(
    file: Any, data_dir: Path | None, namespace: str | None, writers: int, embed: bool
) -> None:
    """Write memories and links from a JSON Lines FILE ('-' for stdin).

    The whole file is validated first (errors name the line; nothing is written). Writes are
    idempotent, so an interrupted ingest is resumed by running it again. With dense recall on,
    a write is acknowledged before its vectors; they follow from the vector queue (see --embed).
    """
    name = getattr(file, "name", "<stdin>")
    plan = parse_jsonl(file, name)
    with opened(data_dir, namespace) as (service, ns):
        report = ingest(service, ns, plan, name=name, writers=writers)
        written = report.memories_created + report.memories_unchanged
        rate = (
            f" in {report.memory_seconds:.1f} s ({written / report.memory_seconds:,.0f} "
            "memories/s acknowledged)"
            if written and report.memory_seconds > 0
            else ""
        )
        click.echo(
            f"ingested {name} into {ns!r}: {report.memories_created} memories created, "
            f"{report.memories_unchanged} unchanged, {report.links} links, "
            f"{report.evicted} evicted{rate}"
        )
        vectors_after_write(service, ns, wait=embed)


@click.command("import")
@common_options
@writers_option
@embed_option
@click.argument("file", type=click.File("rb"))
@click.pass_context
def import_command(
    ctx: click.Context,
    file: Any,
    data_dir: Path | None,
    namespace: str | None,
    writers: int,
    embed: bool,
) -> None:
    """Import a JSON Lines FILE written by ``graphsvc export`` (same as ingest)."""
    ctx.invoke(
        ingest_command,
        file=file,
        data_dir=data_dir,
        namespace=namespace,
        writers=writers,
        embed=embed,
    )


@click.command("export")
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


@click.command()
@common_options
@click.argument("query")
@request_options(BundleQuery)
@click.option("--json", "as_json", is_flag=True, help="Print the ContextBundle as JSON.")
def bundle(
    query: str, as_json: bool, data_dir: Path | None, namespace: str | None, **options: Any
) -> None:
    """What memory offers a prompt for QUERY, under a token budget."""
    request = request_of(BundleQuery, query, options)
    with opened(data_dir, namespace, read_only=True) as (service, ns):
        result = service.bundle(ns, request)
    if as_json:
        emit_json(result.to_json_dict())
    else:
        print_bundle(result)


@click.command()
@common_options
@click.argument("cue")
@request_options(ReconstructQuery)
@click.option("--save", is_flag=True, help="Store the belief, linked to its sources.")
@click.option("--run-id", default=None, help="With --save: record a memory_recall event.")
@click.option("--json", "as_json", is_flag=True, help="Print the ReconstructedBelief as JSON.")
def reconstruct(
    cue: str,
    save: bool,
    run_id: str | None,
    as_json: bool,
    data_dir: Path | None,
    namespace: str | None,
    **options: Any,
) -> None:
    """The belief memory supports about CUE: top hits plus the causal context around them."""
    request = request_of(ReconstructQuery, cue, options)
    with opened(data_dir, namespace, read_only=not save) as (service, ns):
        if save:
            result = service.reconstruct_and_store(ns, request, run_id=run_id)
        else:
            result = service.reconstruct(ns, request)
    if as_json:
        emit_json(result.to_json_dict())
    else:
        print_belief(result)


@click.command()
@common_options
@click.argument("text")
@click.option("--kind", default="observation", show_default=True)
@click.option("--occurred-at", default=None, help="ISO-8601 time the thing happened.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--source", default=None, help="Where the memory came from.")
@click.option("--id", "memory_id", default=None, help="Explicit UUID (default: from content).")
@click.option(
    "--valid-from",
    default=None,
    help="When it became true (default: --occurred-at, else when it is written). ISO 8601 "
    "with a zone: 2024-06-01T00:00:00Z.",
)
@click.option(
    "--valid-until",
    default=None,
    help="When it stopped being true (exclusive). ISO 8601 with a zone.",
)
@click.option("--json", "as_json", is_flag=True)
def remember(
    text: str,
    kind: str,
    occurred_at: str | None,
    tags: tuple[str, ...],
    source: str | None,
    memory_id: str | None,
    valid_from: str | None,
    valid_until: str | None,
    as_json: bool,
    data_dir: Path | None,
    namespace: str | None,
) -> None:
    """Write one memory."""
    item = MemoryInput.model_validate(
        {
            "id": memory_id,
            "text": text,
            "kind": kind,
            "occurredAt": occurred_at,
            "tags": list(tags),
            "source": source,
            "validFrom": valid_from,
            "validUntil": valid_until,
        }
    )
    with opened(data_dir, namespace) as (service, ns):
        memory = service.remember(ns, item)
        vectors_after_write(service, ns, wait=True, show=False, quiet=True)
    if as_json:
        emit_json(memory.to_json_dict())
    else:
        click.echo(f"remembered {memory.id} ({memory.tokens} tokens)")


@click.command()
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


@click.command()
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


@click.command()
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
                click.echo(f"  {key:<15} {'-' if value is None else value}")
