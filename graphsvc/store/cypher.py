"""Named Cypher queries, one per file in the repository's top-level ``cypher/`` folder, each with a
header comment (parameters, columns).

Only the Neo4j store runs them; values are always parameters. A test checks that every file is
used and every name used exists. The folder has one source: ``cypher/`` at the top of a checkout.
The wheel carries the same files inside the package as ``graphsvc/cypher`` (the build's
``force-include``), so an installed graphsvc finds them there and a checkout (an editable install)
finds them beside the package.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from graphsvc.errors import GraphsvcError


@cache
def folder() -> Traversable:
    """Where the queries are: inside the installed package, else the checkout's ``cypher/``."""
    packaged = resources.files("graphsvc").joinpath("cypher")
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "cypher"
    if checkout.is_dir():
        return checkout
    raise GraphsvcError(
        "graphsvc's Cypher queries are missing: neither the installed package nor the checkout "
        f"has them ({checkout}); reinstall graphsvc"
    )


@cache
def queries() -> dict[str, str]:
    """Every named query: file stem -> text (schema.cypher excluded)."""
    found: dict[str, str] = {}
    for entry in folder().iterdir():
        if entry.name.endswith(".cypher") and entry.name != "schema.cypher":
            found[entry.name.removesuffix(".cypher")] = entry.read_text(encoding="utf-8")
    return found


def query(name: str) -> str:
    """The text of a named query. Raises KeyError for an unknown name."""
    try:
        return queries()[name]
    except KeyError:
        raise KeyError(f"no Cypher query named {name!r} in cypher/") from None


def browser_query(name: str) -> str:
    """A ready-made Neo4j Browser exploration (``cypher/browser/<name>.cypher``)."""
    return folder().joinpath("browser", f"{name}.cypher").read_text(encoding="utf-8")


def schema_statements() -> list[str]:
    """The statements of ``schema.cypher``, comments removed, split on a closing semicolon."""
    text = folder().joinpath("schema.cypher").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    parts = (stmt.strip().rstrip(";").strip() for stmt in "\n".join(lines).split(";\n"))
    return [part for part in parts if part]


__all__ = ["browser_query", "folder", "queries", "query", "schema_statements"]
