"""``graphsvc bulk-export FILE DIR``: the files for Neo4j's offline bulk importer, from a file
``graphsvc export`` wrote, for the first load of a large export into a fresh Neo4j server.

The file goes through the very path ``graphsvc import`` takes (:func:`graphsvc.ingest.parse_jsonl`,
then :func:`graphsvc.ingest.ingest` with a :class:`~graphsvc.service.MemoryService`), into an
embedded store held in memory only; what that store then exports (memories with their ids, times
and analysed terms, links with theirs) becomes the importer's CSV files
(:func:`graphsvc.store.neo4j.bulk.write_import_files`). So the checks, the ids, the duplicates,
the links and the times are those of a normal import, and a bad file stops with the same error,
naming the line, before anything is written.

Then ``scripts/neo4j.sh import DIR`` (server stopped) and ``scripts/neo4j.sh start``. The import
REPLACES the whole Neo4j database: it is for the first load of a fresh server only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from graphsvc.cli.common import make_settings, namespace_option
from graphsvc.model import utcnow
from graphsvc.settings import Settings
from graphsvc.store.neo4j.bulk import BulkFiles, write_import_files


def bulk_files(
    lines: Iterable[str | bytes],
    namespace: str,
    directory: Path,
    settings: Settings,
    *,
    name: str = "<input>",
    clock: Callable[[], datetime] = utcnow,
) -> BulkFiles:
    """Validate and write, as ``graphsvc import`` of ``lines`` into an empty ``namespace`` on
    Neo4j would, the importer's files for it to ``directory`` (new or empty).

    Args:
        clock: the service's time source (what ``recordedAt`` and a link's ``createdAt`` come
            from, as in a normal import).

    Raises:
        BadInputError: a line is malformed or breaks a rule of ``graphsvc import`` (the message
            names it), or ``directory`` is not new or empty. Nothing is written then.
    """
    from graphsvc.ingest import ingest, parse_jsonl
    from graphsvc.service import MemoryService
    from graphsvc.store.mirror import MirrorStore

    plan = parse_jsonl(lines, name)
    store = MirrorStore(None)
    store.open()
    try:
        service = MemoryService(store, settings, clock=clock)
        ingest(service, namespace, plan, name=name, progress=False)
        return write_import_files(namespace, store.export(namespace), directory)
    finally:
        store.close()


@click.command("bulk-export")
@namespace_option
@click.argument("file", type=click.File("rb"))  # decoded line by line, as ``import`` does
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def bulk_export(file: Any, directory: Path, namespace: str | None) -> None:
    """Write Neo4j bulk-import files to DIRECTORY from a FILE written by ``graphsvc export``.

    For the FIRST load of a large export into a FRESH Neo4j server: `scripts/neo4j.sh import
    DIRECTORY` REPLACES the whole database. The file is checked as `graphsvc import` checks it
    (errors name the line; nothing is written).
    """
    settings = make_settings(None, namespace)
    name = getattr(file, "name", "<stdin>")
    started = time.perf_counter()
    files = bulk_files(file, settings.namespace, directory, settings, name=name)
    seconds = time.perf_counter() - started
    click.echo(
        f"wrote {files.directory}: {files.memories} memories, {files.links} links, "
        f"{files.terms} terms of namespace {settings.namespace!r} in {seconds:.1f}s"
    )
    click.echo(
        "next, with the server of the home STOPPED (the import REPLACES the whole database):\n"
        f"  bash scripts/neo4j.sh import {files.directory}\n"
        "  bash scripts/neo4j.sh start\n"
        "the store makes its indexes at the first connection; with dense recall on, run "
        "`graphsvc embed` then"
    )


__all__ = ["bulk_export", "bulk_files"]
