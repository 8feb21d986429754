"""Hostile dataset files given to ``graphsvc convert locomo|esc|beam``: each is refused with exit 2
and one line, never a traceback, and nothing half converted; before, 42 of 44 crashed ``convert``
(exit 1). ``scripts/attack_faults.py --only cli`` fuzzes the same command as a real process."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from graphsvc_lab.convert import convert
from tests.hostile import HOSTILE, one_line


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
