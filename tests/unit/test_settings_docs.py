"""Every setting is documented: docs/configuration.md names each ``GRAPHSVC_*`` variable that
:class:`graphsvc.settings.Settings` reads, so a setting cannot ship unexplained."""

from __future__ import annotations

import re
from pathlib import Path

from graphsvc.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_in_the_configuration_docs() -> None:
    docs = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    prefix = str(Settings.model_config.get("env_prefix", ""))
    missing = [
        prefix + name.upper() for name in Settings.model_fields if prefix + name.upper() not in docs
    ]
    assert not missing, f"settings missing from docs/configuration.md: {missing}"


# The sections of docs/configuration.md whose rows are not the service's settings: the variables of
# the scripts and tests, and the lab's own settings (checked by the lab's tests).
NOT_SERVICE_SECTIONS = ("Tests and scripts", "The lab (graphsvc-lab)")
# The bundled Neo4j launcher's variables (scripts/neo4j.sh), documented under Neo4j beside the
# service's connection settings.
LAUNCHER = ROOT / "scripts" / "neo4j.sh"


def documented_rows() -> list[tuple[str, str]]:
    """(section, variable) for every ``GRAPHSVC_*`` a table row of docs/configuration.md names in
    its first cell."""
    section = ""
    rows = []
    for line in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("| `GRAPHSVC_"):
            first = line.split("|")[1]
            rows += [(section, v) for v in re.findall(r"`(GRAPHSVC_[A-Z0-9_]+)`", first)]
    return rows


def test_every_documented_service_setting_is_read_by_the_service() -> None:
    """A row outside the scripts' and the lab's sections is a field of ``Settings`` (or one of the
    Neo4j launcher's variables): a setting that moved (GRAPHSVC_EVAL_DATA to the lab) or went away
    leaves no row behind that says the service reads it."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    fields = {prefix + name.upper() for name in Settings.model_fields}
    launcher = LAUNCHER.read_text(encoding="utf-8")
    rows = documented_rows()
    assert len(rows) > len(fields) // 2  # the parse sees the tables
    stale = [
        (section, variable)
        for section, variable in rows
        if section not in NOT_SERVICE_SECTIONS
        and variable not in fields
        and not (section == "Neo4j" and variable in launcher)
    ]
    assert not stale, f"documented as the service's but not in Settings: {stale}"
    assert ("The lab (graphsvc-lab)", "GRAPHSVC_EVAL_DATA") in rows
