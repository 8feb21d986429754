"""The service's tests stand without the lab: no file under tests/ imports ``graphsvc_lab``
(module level, inside a function or under ``TYPE_CHECKING``), so the service's suite runs where only
graphsvc is installed. The lab's tests live in lab/tests."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
LAB = "graphsvc_lab"


def lab_imports(source: str) -> list[int]:
    """The lines of ``source`` that import the lab or anything in it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name == LAB or name.startswith(LAB + ".") for name in names):
            found.append(node.lineno)
    return found


def test_no_test_of_the_service_imports_the_lab() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 50  # the walk sees the suite
    offenders = {
        str(path.relative_to(TESTS.parent)): lines
        for path in files
        if (lines := lab_imports(path.read_text(encoding="utf-8")))
    }
    assert not offenders, f"tests importing graphsvc_lab (move them to lab/tests): {offenders}"


def test_every_spelling_of_a_lab_import_is_seen() -> None:
    source = (
        "import graphsvc_lab\n"
        "import os, graphsvc_lab.bench as b\n"
        "from graphsvc_lab.datasets import load_locomo\n"
        "def f():\n    from graphsvc_lab import convert\n"
        "if TYPE_CHECKING:\n    from graphsvc_lab.eval import qa\n"
        "import graphsvc_labs\n"
        "from graphsvc import lab\n"
    )
    assert lab_imports(source) == [1, 2, 3, 5, 7]
