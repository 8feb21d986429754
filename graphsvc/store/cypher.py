"""Named Cypher queries, one per file in ``graphsvc/cypher/`` with a header comment.

Only the Neo4j store runs them; values are always parameters. A test checks that every file is
used and every name used exists.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


def _folder() -> resources.abc.Traversable:
    return resources.files("graphsvc").joinpath("cypher")


@cache
def queries() -> dict[str, str]:
    """Every named query: file stem -> text (schema.cypher excluded)."""
    found: dict[str, str] = {}
    for entry in _folder().iterdir():
        if entry.name.endswith(".cypher") and entry.name != "schema.cypher":
            found[entry.name.removesuffix(".cypher")] = entry.read_text(encoding="utf-8")
    return found


def query(name: str) -> str:
    """The text of a named query. Raises KeyError for an unknown name."""
    try:
        return queries()[name]
    except KeyError:
        raise KeyError(f"no Cypher query named {name!r} in graphsvc/cypher/") from None


def schema_statements() -> list[str]:
    """The statements of ``schema.cypher``, comments removed, split on a closing semicolon."""
    text = _folder().joinpath("schema.cypher").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    parts = (stmt.strip().rstrip(";").strip() for stmt in "\n".join(lines).split(";\n"))
    return [part for part in parts if part]


__all__ = ["queries", "query", "schema_statements"]
