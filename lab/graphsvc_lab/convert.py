"""``graphsvc convert``: public dataset files as graphsvc ingest JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

import click

from graphsvc_lab.datasets import esc_rows, load_esc, load_locomo, locomo_rows


@click.command("convert")
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


__all__ = ["convert"]
