"""graphsvc's command line with the lab installed: the commands it brings (eval, bench,
bench-http, convert) load lazily with their own help, are declared on the entry point graphsvc
reads, and ``convert`` feeds ``ingest`` (a LoCoMo conversation, when the datasets are present)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from lab_support import LAB_COMMANDS as LAB_TABLE
from lab_support import eval_data, lab_cli

from graphsvc.cli import COMMANDS, LAB_COMMANDS, PLUGINS, LazyGroup
from tests.e2e.test_cli import BUNDLE_FIELDS, Invoke, invoke

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["invoke"]  # the command line on a fresh data folder (the service's CLI tests)


def test_locomo_conversation_ingests_and_bundles(invoke: Invoke, tmp_path: Path) -> None:
    locomo = eval_data("locomo", "locomo_dev.json")
    converted = CliRunner().invoke(lab_cli, ["convert", "locomo", str(locomo), "--only", "0"])
    assert converted.exit_code == 0
    path = tmp_path / "c0.jsonl"
    path.write_text(converted.stdout, encoding="utf-8")
    assert invoke("ingest", str(path)).exit_code == 0
    out = invoke("bundle", "When did Caroline go to the LGBTQ support group?", "--json")
    bundle = json.loads(out.output)
    assert BUNDLE_FIELDS <= bundle.keys()
    top = bundle["capsules"][0]
    assert "LGBTQ support group" in top["text"]
    assert top["text"].startswith("[2023-05-08] Caroline:")


def test_every_lazy_command_loads_and_its_listed_help_is_its_own() -> None:
    ctx = click.Context(lab_cli)
    for name, (target, listed) in {**COMMANDS, **LAB_TABLE}.items():
        command = lab_cli.get_command(ctx, name)
        assert command is not None, target
        own = command.get_short_help_str(200)
        assert click.Command(name, help=listed).get_short_help_str(200) == own, name


def test_the_lab_brings_exactly_the_commands_graphsvc_names_for_it() -> None:
    assert sorted(LAB_TABLE) == sorted(LAB_COMMANDS)
    assert not set(LAB_TABLE) & set(COMMANDS)


def test_the_lab_declares_its_commands_on_the_entry_point_graphsvc_reads() -> None:
    project = tomllib.loads((ROOT / "lab" / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"][PLUGINS] == {"lab": "graphsvc_lab.commands:COMMANDS"}


def test_an_installed_plugin_adds_its_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A distribution's metadata on sys.path, as pip writes it, declaring the lab's table.
    meta = tmp_path / "graphsvc_lab_probe-0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: graphsvc-lab-probe\nVersion: 0\n")
    (meta / "entry_points.txt").write_text(
        "[graphsvc.commands-probe]\nlab = graphsvc_lab.commands:COMMANDS\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    group = LazyGroup(name="graphsvc", lazy=COMMANDS, plugins="graphsvc.commands-probe")
    listed = CliRunner().invoke(group, ["--help"])
    assert listed.exit_code == 0
    assert "eval " in listed.output and "not installed" not in listed.output
    shown = CliRunner().invoke(group, ["bench", "--help"])
    assert shown.exit_code == 0 and "--memories" in shown.output
