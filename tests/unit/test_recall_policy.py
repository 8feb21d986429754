"""The recall policy (graphsvc/recall/policy.py): built once from the settings, changed only by
making a new one."""

from __future__ import annotations

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
def test_the_two_fusion_settings_make_one_mode(
    tmp_path: Path, spread: bool, relative: bool, mode: str
) -> None:
    settings = make_settings(tmp_path, dense_spread=spread, dense_relative=relative)
    assert RecallPolicy.from_settings(settings).fusion.mode == mode


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
    with pytest.raises(ValueError, match="use one of relative, raw, minmax"):
        base.replaced({"fusion.mode": "sideways"})
    with pytest.raises(ValueError, match=r"lexical\.bm25_b"):
        base.replaced({"bm25_b": 0.5})
    assert set(POLICY_FIELDS) == {"lexical", "conversation", "fusion", "bundle", "walk"}
