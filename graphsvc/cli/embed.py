"""``graphsvc embed``: give every memory a vector of the configured encoder (dense recall).

Memories written while dense recall is on get their vector at write time; this command covers
the rest: a store filled before dense recall was on, memories written while the model was
missing, or a change of model (``--rebuild``). It works in batches, each durable, with a progress
bar; an interrupted run is finished by running it again.
"""

from __future__ import annotations

from pathlib import Path

import click
from tqdm import tqdm

from graphsvc.cli.common import common_options, opened


@click.command()
@common_options
@click.option("--all", "every", is_flag=True, help="Every namespace of the store.")
@click.option(
    "--rebuild",
    is_flag=True,
    help="Replace the vectors (needed when they come from another model).",
)
@click.option(
    "--batch", default=64, show_default=True, type=int, help="Memories encoded per write."
)
def embed(
    every: bool, rebuild: bool, batch: int, data_dir: Path | None, namespace: str | None
) -> None:
    """Encode the memories that have no vector (resumable; --rebuild replaces them all).

    Uses the model GRAPHSVC_EMBED_MODEL / GRAPHSVC_EMBED_MODEL_DIR names. Exit status 2 when
    dense recall is off (GRAPHSVC_EMBED=off, or the model is not installed: bash
    scripts/install_model.sh) or the vectors come from another model without --rebuild.
    """
    with opened(data_dir, namespace) as (service, default_namespace):
        names = service.namespaces() if every else [default_namespace]
        for name in names:
            stats = service.stats(name)
            todo = stats.memories if rebuild else stats.memories - stats.vectors
            with tqdm(total=todo, unit="memory", desc=name, disable=None) as bar:
                done = service.embed(name, rebuild=rebuild, batch=batch, progress=bar.update)
            click.echo(f"{name}: encoded {done} memory(ies) with {stats.embed_model}")
