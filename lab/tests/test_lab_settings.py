"""The lab's settings: each documented in docs/configuration.md, in the lab's own section, and none
of them read by the service's ``Settings`` (GRAPHSVC_EVAL_DATA moved from there to here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphsvc.settings import Settings
from graphsvc_lab.datasets import eval_data_root
from graphsvc_lab.settings import LabSettings

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## The lab (graphsvc-lab)"


def test_every_lab_setting_is_documented_in_the_labs_section() -> None:
    docs = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = docs.split(SECTION, 1)[1].split("\n## ", 1)[0]
    prefix = str(LabSettings.model_config.get("env_prefix", ""))
    names = [prefix + name.upper() for name in LabSettings.model_fields]
    assert names
    missing = [name for name in names if f"| `{name}` |" not in section]
    assert not missing, f"lab settings missing from docs/configuration.md ({SECTION}): {missing}"


def test_the_service_reads_none_of_the_labs_settings() -> None:
    assert not set(LabSettings.model_fields) & set(Settings.model_fields)


def test_the_eval_data_variable_names_the_datasets_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHSVC_EVAL_DATA", str(tmp_path))
    assert eval_data_root() == tmp_path
    assert eval_data_root(LabSettings(eval_data=tmp_path / "given")) == tmp_path / "given"
