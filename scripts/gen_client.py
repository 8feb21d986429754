"""Generate the synchronous client (graphsvc/client/_sync.py) from the asynchronous one.

The async client (graphsvc/client/_async.py) is the hand-written source. This script runs unasync
over it (``async``/``await`` dropped, ``AsyncGraphsvcClient`` -> ``GraphsvcClient``,
``httpx.AsyncClient`` -> ``httpx.Client``, ``aclose`` -> ``close``, ``__aenter__`` ->
``__enter__``...), rewrites the few docstring phrases that only make sense for one of the two,
puts a "do not edit" header on top, and passes the result through ``ruff check --fix`` and
``ruff format`` with the project's configuration, so that the committed file is exactly what this
script prints and the linters leave it alone.

Usage::

    python scripts/gen_client.py               # rewrite graphsvc/client/_sync.py
    python scripts/gen_client.py --check       # exit 1 when the committed file is stale
    python scripts/gen_client.py --output F    # write to F instead (the staleness test does)

Needs the dev tools: ``unasync`` and ``ruff`` (``pip install -e ".[dev]"``).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "graphsvc" / "client" / "_async.py"
TARGET = ROOT / "graphsvc" / "client" / "_sync.py"

HEADER = "# generated from _async.py by scripts/gen_client.py; do not edit\n"

# Names unasync does not know (its defaults cover __aenter__, __aexit__, AsyncIterator, ...).
# Without the httpx entry its rule for Async* names would produce ``httpx.SyncClient``.
NAMES = {
    "AsyncGraphsvcClient": "GraphsvcClient",
    "AsyncClient": "Client",
    "aclose": "close",
}

MODULE_DOCSTRING = '''"""The synchronous client, generated from ``_async.py`` (see that module and
``scripts/gen_client.py``): change the async client and regenerate, never this file.
"""'''

# Docstring prose unasync cannot see (it rewrites names, not text). Each phrase must occur in the
# source, so that a reworded docstring fails here instead of leaking "async" into the sync client.
PHRASES = [
    (
        "An asynchronous client for graphsvc's GraphQL API; every method is a coroutine.",
        "A synchronous client for graphsvc's GraphQL API.",
    ),
    (
        "Use it as an async context manager, or call :meth:`aclose`.",
        "Use it as a context manager, or call :meth:`close`.",
    ),
    ("``httpx.AsyncClient``", "``httpx.Client``"),
]


class GenerationError(Exception):
    """The sync client cannot be generated; the message says what to change."""


def unasynced(source: str) -> str:
    """``source`` with unasync's token rules (and :data:`NAMES`) applied."""
    with tempfile.TemporaryDirectory() as tmp:
        async_file = Path(tmp) / "_async.py"
        async_file.write_text(source, encoding="utf-8")
        rule = unasync.Rule("_async.py", "_sync.py", additional_replacements=NAMES)
        unasync.unasync_files([str(async_file)], [rule])
        return (Path(tmp) / "_sync.py").read_text(encoding="utf-8")


def replace_docstrings(source: str) -> str:
    """The module docstring replaced by :data:`MODULE_DOCSTRING`, and :data:`PHRASES` applied.

    Raises:
        GenerationError: the module has no docstring, or a phrase no longer occurs.
    """
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.end_lineno is not None
    ):
        raise GenerationError(f"{SOURCE} must start with a module docstring")
    lines = source.splitlines(keepends=True)
    source = MODULE_DOCSTRING + "\n" + "".join(lines[first.end_lineno :])
    for old, new in PHRASES:
        if old not in source:
            raise GenerationError(
                f"{old!r} no longer occurs in {SOURCE.name}: update PHRASES in "
                "scripts/gen_client.py to the new wording"
            )
        source = source.replace(old, new)
    return source


def ruff(args: list[str], source: str) -> str:
    """``source`` passed through ``ruff ARGS`` on stdin, as if it were :data:`TARGET` (so the
    project's configuration applies wherever the output goes).

    Raises:
        GenerationError: ruff failed or left violations it cannot fix.
    """
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(TARGET), "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise GenerationError(
            f"ruff {' '.join(args)} failed on the generated client (fix _async.py so the sync "
            f"version is clean too):\n{done.stderr}{done.stdout}"
        )
    return done.stdout


def generate() -> str:
    """The text of the sync client, from the current async source.

    Raises:
        GenerationError: see :func:`replace_docstrings` and :func:`ruff`.
    """
    source = replace_docstrings(unasynced(SOURCE.read_text(encoding="utf-8")))
    source = HEADER + source
    source = ruff(["check", "--fix", "--quiet"], source)
    return ruff(["format", "--quiet"], source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=TARGET, help="where to write (%(default)s)")
    parser.add_argument(
        "--check", action="store_true", help="only compare with the committed file; exit 1 if stale"
    )
    args = parser.parse_args(argv)
    try:
        text = generate()
    except GenerationError as exc:
        print(f"gen_client: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            stale = TARGET.relative_to(ROOT)
            print(f"gen_client: {stale} is stale: run scripts/gen_client.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
