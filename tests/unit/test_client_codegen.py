"""The sync client is generated from the async one (scripts/gen_client.py): the committed file is
what the script makes today, and both clients offer the same methods with the same signatures."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from graphsvc.client import AsyncGraphsvcClient, GraphsvcClient

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "graphsvc" / "client" / "_sync.py"
HEADER = "# generated from _async.py by scripts/gen_client.py; do not edit\n"

# Names that differ by design between the two clients (async -> sync).
RENAMED = {"aclose": "close", "__aenter__": "__enter__", "__aexit__": "__exit__"}


def test_generated_sync_client_is_current(tmp_path: Path) -> None:
    output = tmp_path / "_sync.py"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_client.py"), "--output", str(output)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    committed = GENERATED.read_text(encoding="utf-8")
    assert committed.startswith(HEADER)
    assert output.read_text(encoding="utf-8") == committed, (
        "graphsvc/client/_sync.py is stale (or was edited by hand): change _async.py, then run "
        "python scripts/gen_client.py"
    )


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if inspect.isfunction(member) and (not name.startswith("_") or name.startswith("__"))
    }


def test_both_clients_have_the_same_methods_and_signatures() -> None:
    sync = _methods(GraphsvcClient)
    async_methods = _methods(AsyncGraphsvcClient)
    from_async = {RENAMED.get(name, name): sig for name, sig in async_methods.items()}
    assert sorted(sync) == sorted(from_async)
    for name, signature in sync.items():
        if name == "__init__":
            continue  # the type of ``http`` differs: httpx.Client / httpx.AsyncClient
        assert signature == from_async[name], name
    assert all(
        inspect.iscoroutinefunction(getattr(AsyncGraphsvcClient, name))
        for name in async_methods
        if name != "__init__"
    )
    assert not any(inspect.iscoroutinefunction(getattr(GraphsvcClient, name)) for name in sync)
