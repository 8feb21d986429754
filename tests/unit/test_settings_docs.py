"""Every setting is documented: docs/configuration.md names each ``GRAPHSVC_*`` variable that
:class:`graphsvc.settings.Settings` reads, so a setting cannot ship unexplained."""

from __future__ import annotations

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
