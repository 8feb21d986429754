"""Hostile files given to the commands that read a file a user names: the API keys file
(``GRAPHSVC_API_KEYS_FILE``, read by ``serve`` and ``mcp``; the lab's tests give the same files to
``graphsvc convert``). Each is refused with exit 2 and one line, never a traceback; before, a deeply
nested keys file crashed ``serve`` and ``mcp --print-config`` with a RecursionError.
``scripts/attack_faults.py --only cli`` fuzzes the same commands as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphsvc.api.auth import ApiKeys
from graphsvc.errors import BadInputError
from tests.hostile import DEEP, HOSTILE, one_line

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("suffix", [".json", ".toml"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_keys_file_is_one_bad_input_error(tmp_path: Path, suffix: str, name: str) -> None:
    path = tmp_path / f"keys{suffix}"
    path.write_bytes(HOSTILE[name])
    with pytest.raises(BadInputError) as refused:
        ApiKeys.load_file(path)
    assert str(path) in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_deep_toml_keys_file_and_surrogate_keys_are_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_bytes(b"a = " + b"[" * DEEP + b"]" * DEEP)
    with pytest.raises(BadInputError, match="nested too deeply"):
        ApiKeys.load_file(deep)
    tables = tmp_path / "tables.toml"
    tables.write_bytes(b"a = " + b"{b = " * 100 + b"1" + b"}" * 100)
    with pytest.raises(BadInputError, match="nested deeper than 64 levels"):
        ApiKeys.load_file(tables)
    lone = tmp_path / "lone.json"
    lone.write_bytes(b'{"k3y-\\udc00-0123456789abcdef": {"namespace": "a", "role": "read"}}')
    with pytest.raises(BadInputError, match="unpaired surrogate"):
        ApiKeys.load_file(lone)


def test_serve_and_mcp_refuse_a_deeply_nested_keys_file_with_exit_2(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_bytes(HOSTILE["deep object"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
    env["GRAPHSVC_API_KEYS_FILE"] = str(keys)
    where = ["--data-dir", str(tmp_path / "d"), "--create"]
    for command in (["serve", *where], ["mcp", "--print-config", *where]):
        done = subprocess.run(
            [sys.executable, "-m", "graphsvc.cli", *command],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, (command, done.stderr)
        assert "nested too deeply" in one_line(done.stderr), done.stderr
        assert done.stdout == ""
