"""The house's size limits (issue 40): a newcomer reads a module, a class or a function whole.

No module of the package over 700 lines, no class with more than 25 methods of its own, no function
over 80 lines. A piece that grows past a limit is split by what it does, not squeezed.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "graphsvc"
MODULE_LINES = 700
CLASS_METHODS = 25
FUNCTION_LINES = 80


def _modules() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(PACKAGE.parent)), path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def test_the_package_is_found() -> None:
    assert len(_modules()) > 50


def test_no_module_is_over_the_limit() -> None:
    over = {name: text.count("\n") for name, text in _modules()}
    assert {name: n for name, n in over.items() if n > MODULE_LINES} == {}


def test_no_class_has_too_many_methods_of_its_own() -> None:
    over = {}
    for name, text in _modules():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                methods = [
                    item
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                if len(methods) > CLASS_METHODS:
                    over[f"{name}:{node.name}"] = len(methods)
    assert over == {}


def test_no_function_is_over_the_limit() -> None:
    over = {}
    for name, text in _modules():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > FUNCTION_LINES:
                    over[f"{name}:{node.name}"] = lines
    assert over == {}
