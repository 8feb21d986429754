"""Hostile files given to the commands that read a file a user names: ``graphsvc convert
locomo|esc|beam`` and the API keys file (``GRAPHSVC_API_KEYS_FILE``, read by ``serve`` and
``mcp``). Each is refused with exit 2 and one line, never a traceback; before, 42 of 44 hostile
dataset files crashed ``convert`` (exit 1), and a deeply nested keys file crashed ``serve`` and
``mcp --print-config`` with a RecursionError. ``scripts/attack_faults.py --only cli`` fuzzes the
same commands as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphsvc.api.auth import ApiKeys
from graphsvc.errors import BadInputError
from graphsvc_lab.convert import convert

REPO = Path(__file__).resolve().parents[2]
DEEP = 100_000

#: name -> file content: what the fuzz of the fault runner found, each kind once.
HOSTILE: dict[str, bytes] = {
    "latin-1": "caf\xe9 \xff".encode("latin-1"),
    "utf-16": '[{"a": 1}]'.encode("utf-16"),
    "binary": bytes(range(256)) * 4,
    "empty": b"",
    "not json": b"this is not json\n",
    "a number": b"42",
    "a string": b'"a string"',
    "null": b"null",
    "an object": b'{"conversation": {}}',
    "a list of numbers": b"[1, 2, 3]",
    "deep list": b"[" * DEEP + b"]" * DEEP,
    "deep object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "nan": b'[{"conversation": NaN}]',
    "infinity": b"[Infinity]",
    "a huge number": b"[" + b"9" * 20_000 + b"]",
    "a huge float": b"[1e999]",
    "a lone surrogate": b'[{"conversation": {"session_1": [{"speaker": "\\ud800"}]}}]',
    "wrong fields": b'[{"conversation": {"session_1": [{"who": "a"}]}}]',
    "wrong types": b'[{"conversation": {"session_1": "not a list", "session_1_date_time": 5}}]',
    "bad date": (
        b'[{"conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],'
        b' "session_1_date_time": "yesterday"}}]'
    ),
    "a truncated file": b'[{"conversation": {"session_1": [{"speaker": "A"',
}


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("dataset", ["locomo", "esc", "beam"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_convert_refuses_a_hostile_file_in_one_line(
    tmp_path: Path, dataset: str, name: str
) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(HOSTILE[name])
    result = CliRunner().invoke(convert, [dataset, str(path)], catch_exceptions=False)
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == ""  # nothing half converted
    line = one_line(result.stderr)
    assert line.startswith("error: ") and str(path) in line, line


@pytest.mark.parametrize("dataset", ["locomo", "esc", "beam"])
def test_convert_refuses_a_folder_or_a_missing_file_in_one_line(
    tmp_path: Path, dataset: str
) -> None:
    for path in (tmp_path, tmp_path / "missing.json"):
        result = CliRunner().invoke(convert, [dataset, str(path)], catch_exceptions=False)
        assert result.exit_code == 2, result.output
        assert "cannot read the dataset file" in one_line(result.stderr)


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
