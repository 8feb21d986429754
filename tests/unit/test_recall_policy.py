"""The recall policy (graphsvc/recall/policy.py): built once from the settings, changed only by
making a new one."""

from __future__ import annotations

import logging
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from graphsvc.recall.policy import POLICY_FIELDS, RecallPolicy
from tests.helpers import make_settings


def test_the_defaults_are_the_settings_defaults(tmp_path: Path) -> None:
    assert RecallPolicy.from_settings(make_settings(tmp_path)) == RecallPolicy()


@pytest.mark.parametrize(
    ("spread", "relative", "mode"),
    [
        (True, True, "minmax"),
        (True, False, "minmax"),
        (False, True, "relative"),
        (False, False, "raw"),
    ],
)
def test_the_two_deprecated_fusion_settings_still_make_one_mode(
    tmp_path: Path,
    spread: bool,
    relative: bool,
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphsvc.settings"):
        settings = make_settings(tmp_path, dense_spread=spread, dense_relative=relative)
    assert RecallPolicy.from_settings(settings).fusion.mode == mode
    assert settings.fusion_mode == mode
    assert f"set GRAPHSVC_FUSION_MODE={mode} instead" in caplog.text
    assert "GRAPHSVC_DENSE_RELATIVE and GRAPHSVC_DENSE_SPREAD are deprecated" in caplog.text


def test_fusion_mode_wins_over_the_deprecated_settings_and_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphsvc.settings"):
        settings = make_settings(tmp_path, fusion_mode="rrf", rrf_k=20, dense_spread=True)
        plain = make_settings(tmp_path)
    assert RecallPolicy.from_settings(settings).fusion.mode == "rrf"
    assert RecallPolicy.from_settings(settings).fusion.rrf_k == 20
    assert plain.fusion_mode == "minmax"
    assert caplog.text == ""


def test_one_deprecated_setting_alone_is_named_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphsvc.settings"):
        settings = make_settings(tmp_path, dense_relative=False)
    assert settings.fusion_mode == "raw"
    assert "GRAPHSVC_DENSE_RELATIVE is deprecated: set GRAPHSVC_FUSION_MODE=raw" in caplog.text


def test_settings_land_in_their_stage(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, bm25_b=0.3, dense_k=7, dense_weight=0.2, relative_floor=0.1, walk_max_nodes=9
    )
    policy = RecallPolicy.from_settings(settings)
    assert (policy.lexical.bm25_b, policy.fusion.k, policy.fusion.weight) == (0.3, 7, 0.2)
    assert (policy.bundle.relative_floor, policy.walk.max_nodes) == (0.1, 9)


def test_a_variant_is_a_new_policy() -> None:
    base = RecallPolicy()
    variant = base.replaced({"fusion.mode": "minmax", "conversation.seeds_ask": False})
    assert (variant.fusion.mode, variant.conversation.seeds_ask) == ("minmax", False)
    assert base == RecallPolicy()
    assert variant.value("fusion.mode") == "minmax"
    with pytest.raises(FrozenInstanceError):
        base.fusion.weight = 0.9  # type: ignore[misc]
    with pytest.raises(ValueError, match="use one of minmax, zscore, relative, raw, rrf"):
        base.replaced({"fusion.mode": "sideways"})
    with pytest.raises(ValueError, match=r"lexical\.bm25_b"):
        base.replaced({"bm25_b": 0.5})
    assert set(POLICY_FIELDS) == {"lexical", "conversation", "fusion", "bundle", "walk"}
