"""Print the GraphQL schema to ``schema.graphql`` (or another file, or ``-`` for stdout).

    python -m graphsvc.api.export            # writes ./schema.graphql
    python -m graphsvc.api.export --check    # exit 1 when ./schema.graphql is stale

The same text as ``strawberry export-schema graphsvc.api.schema:schema``: ``schema.as_str()`` and
a final newline. ``tests/api/test_api_schema.py`` fails when the checked-in file differs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from graphsvc.api.schema import schema

DEFAULT_PATH = Path("schema.graphql")


def schema_text() -> str:
    """The printed schema, as ``schema.graphql`` holds it."""
    return schema.as_str() + "\n"


@click.command("export-schema")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_PATH)
@click.option("--check", is_flag=True, help="Do not write: exit 1 when PATH is stale.")
def export_schema(path: Path, check: bool) -> None:
    """Write the GraphQL schema to PATH (default ./schema.graphql; '-' for stdout)."""
    text = schema_text()
    if str(path) == "-":
        click.echo(text, nl=False)
        return
    if check:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            click.echo(f"{path} is stale: run python -m graphsvc.api.export", err=True)
            sys.exit(1)
        click.echo(f"{path} is up to date")
        return
    path.write_text(text, encoding="utf-8")
    click.echo(f"wrote {path}")


if __name__ == "__main__":
    export_schema()
