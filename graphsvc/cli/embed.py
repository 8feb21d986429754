"""``graphsvc embed``: drain the vector queue offline, with a progress bar.

A write is acknowledged before its vectors (``GRAPHSVC_EMBED_WRITES=queue``): its memories wait
in the store's vector queue. A server (``graphsvc serve``, ``graphsvc mcp``) encodes them in the
background; without one, this command does, and so do ``graphsvc ingest`` and ``remember`` after
their writes (:func:`vectors_after_write`). It also covers a store filled before dense recall was
on, memories written while the model was missing, and a change of model (``--rebuild``). Each
step is durable; an interrupted run is finished by running it again. When a server holds the
store's queue, the command shows that server's progress instead of encoding beside it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from tqdm import tqdm

from graphsvc.cli.common import common_options, opened

if TYPE_CHECKING:
    from graphsvc.service import MemoryService

#: Seconds between two looks at the backlog while another process drains it.
WATCH_POLL = 1.0


def _bar(total: int, desc: str, show: bool | None) -> tqdm[None]:
    shown = sys.stderr.isatty() if show is None else show
    return tqdm(total=total, unit="memory", desc=desc, disable=not shown, file=sys.stderr)


def drain_here(
    service: MemoryService,
    namespace: str,
    *,
    rebuild: bool = False,
    batch: int | None = None,
    show: bool | None = None,
) -> int:
    """Encode the namespace's vector queue in this process, with a progress bar on stderr
    (``show``: None shows it on a terminal), unless another process holds the store's queue:
    then show how its backlog shrinks, and take over if that process stops. The number of
    vectors this process stored.

    Raises:
        BadInputError: as :meth:`MemoryService.embed_model`.
    """
    model = service.embed_model(namespace, rebuild=rebuild)
    queue = service.vector_queue
    pending = service.stats(namespace).pending_vectors
    with _bar(pending, f"vectors {namespace}", show) as bar:
        while pending:
            lease = service.store.vector_queue_lease()
            if lease is None or lease.owner == queue.owner:
                # Drains until the queue is empty, memories written meanwhile included.
                return queue.drain(namespace, model, limit=batch, progress=bar.update)
            bar.set_postfix_str(f"encoded by {lease.owner}")
            time.sleep(WATCH_POLL)
            now = service.stats(namespace).pending_vectors
            if now <= pending:
                bar.update(pending - now)
            else:  # written meanwhile
                bar.total += now - pending
                bar.refresh()
            pending = now
    return 0


def vectors_after_write(
    service: MemoryService,
    namespace: str,
    *,
    wait: bool,
    show: bool | None = None,
    quiet: bool = False,
) -> None:
    """After a write of the command line: what becomes of the vectors of the memories that
    wait for one, said on stderr. A server that holds the store's vector queue encodes them in
    the background; when none does and ``wait``, they are encoded here with a progress bar
    (``show``; Ctrl-C leaves the rest waiting, durably), said when done unless ``quiet``; else
    the message names the command that does."""
    if service.settings.embed_writes == "inline" or service.dense.model() is None:
        return
    stats = service.stats(namespace)
    pending = stats.pending_vectors
    if not pending:
        return
    lease = service.store.vector_queue_lease()
    if lease is not None and lease.owner != service.vector_queue.owner:
        click.echo(
            f"{pending} memory(ies) wait for their vector: {lease.owner} encodes them in the "
            "background (`graphsvc stats` shows the backlog)",
            err=True,
        )
        return
    if not wait:
        click.echo(
            f"{pending} memory(ies) wait for their vector: `graphsvc embed` encodes them (a "
            "running `graphsvc serve` or `graphsvc mcp` does it in the background)",
            err=True,
        )
        return
    start = time.perf_counter()
    try:
        done = drain_here(service, namespace, show=show)
    except KeyboardInterrupt:
        left = service.stats(namespace).pending_vectors
        click.echo(
            f"stopped: {left} memory(ies) still wait for their vector (`graphsvc embed` "
            "finishes them; what was encoded is stored)",
            err=True,
        )
        raise
    seconds = time.perf_counter() - start
    if not quiet:
        rate = f" ({done / seconds:,.0f}/s)" if seconds > 0 and done else ""
        click.echo(f"encoded the vectors of {done} memory(ies) in {seconds:.1f} s{rate}", err=True)


@click.command()
@common_options
@click.option("--all", "every", is_flag=True, help="Every namespace of the store.")
@click.option(
    "--rebuild",
    is_flag=True,
    help="Replace the vectors (needed when they come from another model).",
)
@click.option(
    "--batch",
    default=None,
    type=click.IntRange(min=1, max=10_000),
    help="Memories encoded per durable step (default GRAPHSVC_EMBED_QUEUE_BATCH).",
)
def embed(
    every: bool, rebuild: bool, batch: int | None, data_dir: Path | None, namespace: str | None
) -> None:
    """Encode the memories that have no vector (resumable; --rebuild replaces them all).

    Drains the vector queue offline, with a progress bar; when a server holds the store's queue,
    shows its progress instead (and takes over if it stops). Uses the model
    GRAPHSVC_EMBED_MODEL / GRAPHSVC_EMBED_MODEL_DIR names. Exit status 2 when dense recall is
    off (GRAPHSVC_EMBED=off, or the model is not installed: bash scripts/install_model.sh) or
    the vectors come from another model without --rebuild.
    """
    with opened(data_dir, namespace) as (service, default_namespace):
        names = service.namespaces() if every else [default_namespace]
        for name in names:
            done = drain_here(service, name, rebuild=rebuild, batch=batch)
            model = service.stats(name).embed_model
            click.echo(f"{name}: encoded {done} memory(ies) with {model}")
