"""No new import circle in graphsvc: every import counts, at module level, inside a function and
under ``TYPE_CHECKING`` (grimp reads them all from the source), since a circle of lazy or type-only
imports is still two modules that cannot be read, tested or moved one without the other.

The circles known on main are listed in ``ALLOWED`` and may only shrink: a new circle, or a known
one that takes in another module, fails; a circle that is gone fails too until its entry goes.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

PACKAGE = "graphsvc"

# No circle is known: every new one fails.
ALLOWED: frozenset[frozenset[str]] = frozenset()


def circles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The import circles of ``graph`` as its strongly connected components of two or more modules:
    a module's component is what it reaches (upstream) and what reaches it (downstream) at once."""
    found: set[frozenset[str]] = set()
    placed: set[str] = set()
    for module in sorted(graph.modules):
        if module in placed:
            continue
        both = graph.find_upstream_modules(module) & graph.find_downstream_modules(module)
        if both:
            component = frozenset({module, *both})
            found.add(component)
            placed |= component
    return found


def describe(graph: grimp.ImportGraph, circle: frozenset[str]) -> str:
    """One way round ``circle``, to say where to cut: the shortest chain from its first module back
    to itself through one of the modules it imports directly."""
    start = min(circle)
    for step in sorted(graph.find_modules_directly_imported_by(start) & circle):
        chain = graph.find_shortest_chain(importer=step, imported=start)
        if chain:
            return " -> ".join((start, *chain))
    return ", ".join(sorted(circle))


def test_no_new_import_circle_in_the_package() -> None:
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    found = circles(graph)
    new = [c for c in found if not any(c <= allowed for allowed in ALLOWED)]
    assert not new, "new import circle(s) in graphsvc: " + "; ".join(
        describe(graph, c) for c in sorted(new, key=min)
    )
    gone = [a for a in ALLOWED if not any(c & a for c in found)]
    assert not gone, f"closed, remove from ALLOWED: {[sorted(a) for a in gone]}"


def test_the_walk_counts_lazy_and_type_only_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A circle closed by an import inside a function (as ``mcp/http`` once reached back into
    ``api/serve`` for ``is_loopback``) or under ``TYPE_CHECKING`` is found like any other."""
    package = tmp_path / "circles_probe"
    package.mkdir()
    files = {
        "__init__.py": "",
        "app.py": "from circles_probe import http\n",
        "http.py": "def check():\n    from circles_probe.serve import loopback\n",
        "serve.py": "from circles_probe.app import http\n",
        "base.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from circles_probe import stage\n"
        ),
        "stage.py": "from circles_probe.base import TYPE_CHECKING\n",
        "alone.py": "from circles_probe import base\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circles_probe", cache_dir=None)
    assert circles(graph) == {
        frozenset({"circles_probe.app", "circles_probe.http", "circles_probe.serve"}),
        frozenset({"circles_probe.base", "circles_probe.stage"}),
    }
