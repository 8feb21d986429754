"""``--tune``: constants and settings, one value or a list to cross-validate
(lab/graphsvc_lab/eval/common.py), and the rows of the plain loading (qa.py)."""

from __future__ import annotations

import uuid

import pytest

from graphsvc.recall.policy import RecallPolicy
from graphsvc_lab.eval.common import (
    SETTINGS_TUNABLE,
    TUNABLE,
    TuneRequest,
    Tuning,
    _current,
    describe_config,
    parse_tune,
    parse_tuning,
    recall_part,
    settings_part,
    tuned_policy,
    tuning_value,
)
from graphsvc_lab.eval.qa import resalted, without_links


def test_lists_become_a_sweep_and_single_values_stay_fixed() -> None:
    request = parse_tune(
        ["dense_weight=0.1,0.2,0.2,0.3", "ANSWER_SHARE=0", "dense_k=20", "SEEDS_ASK=true,false"]
    )
    assert request.fixed == {"ANSWER_SHARE": 0.0, "dense_k": 20}
    assert request.sweep == (("dense_weight", (0.1, 0.2, 0.3)), ("SEEDS_ASK", (True, False)))
    configs = request.configs()
    assert len(configs) == 6
    assert configs[0] == {"dense_weight": 0.1, "SEEDS_ASK": True}
    assert configs[1] == {"dense_weight": 0.1, "SEEDS_ASK": False}
    assert describe_config(configs[0]) == "dense_weight=0.1 SEEDS_ASK=True"
    assert TuneRequest().configs() == []
    # A later setting of a name wins, whether it is a list or not.
    assert parse_tune(["dense_weight=0.1,0.2", "dense_weight=0.4"]).fixed == {"dense_weight": 0.4}
    assert parse_tune(["dense_weight=0.5,0.5"]).fixed == {"dense_weight": 0.5}


def test_settings_are_checked_against_their_range() -> None:
    for bad, says in (
        ("dense_weight=1.5", "at most 1.0"),
        ("dense_weight=0.1,-0.1", "at least 0.0"),
        ("dense_k=2.5", "whole number"),
        ("dense_k=-1", "at least 0"),
        ("embed=off", "NAME one of ANSWER_SHARE"),
        ("dense_weight", "NAME=VALUE"),
    ):
        with pytest.raises(ValueError, match=says):
            parse_tune([bad])
    with pytest.raises(ValueError, match="give one value"):
        parse_tuning(["dense_weight=0.1,0.2"])


def test_every_name_tunes_a_field_of_the_recall_policy() -> None:
    tuning: Tuning = {"ANSWER_SHARE": 0.0, "dense_weight": 0.2}
    assert recall_part(tuning) == {"ANSWER_SHARE": 0.0}
    assert settings_part(tuning) == {"dense_weight": 0.2}
    base = RecallPolicy()
    policy = tuned_policy(base, tuning)
    assert policy.conversation.answer_share == 0.0 and policy.fusion.weight == 0.2
    assert base == RecallPolicy()  # a new policy: the one it came from is unchanged
    assert policy.lexical == base.lexical and policy.fusion.k == base.fusion.k
    for name in (*TUNABLE, *SETTINGS_TUNABLE):
        assert tuning_value(base, name) == _current(name)  # the defaults agree with the settings
    # dense_spread and dense_relative are one field, the fusion mode (min-max by default, which
    # dense_relative alone does not undo).
    assert base.fusion.mode == "minmax"
    assert tuned_policy(base, {"dense_relative": False}).fusion.mode == "minmax"
    relative = tuned_policy(base, {"fusion_mode": "relative"})
    assert tuned_policy(relative, {"dense_relative": False}).fusion.mode == "raw"
    assert tuned_policy(relative, {"dense_spread": True}).fusion.mode == "minmax"
    minmax = tuned_policy(base, {"dense_spread": True})
    assert tuned_policy(minmax, {"dense_spread": False}).fusion.mode == "relative"
    assert tuning_value(minmax, "dense_spread") is True
    with pytest.raises(ValueError, match="unknown recall policy field"):
        base.replaced({"fusion.nothing": 1})


ROWS = [
    {"type": "memory", "id": "11111111-1111-1111-1111-111111111111", "text": "a", "source": "k:1"},
    {"type": "memory", "id": "22222222-2222-2222-2222-222222222222", "text": "b", "source": "k:2"},
    {
        "type": "link",
        "source": "11111111-1111-1111-1111-111111111111",
        "target": "22222222-2222-2222-2222-222222222222",
        "kind": "PRECEDES",
    },
]


def test_plain_rows_drop_links_and_resalting_keeps_keys_and_links_whole() -> None:
    plain = without_links(ROWS)
    assert [r["type"] for r in plain] == ["memory", "memory"]
    assert plain[0] == ROWS[0] and plain[0] is not ROWS[0]
    moved = resalted(ROWS, "hybrid")
    ids = [r["id"] for r in moved[:2]]
    assert all(uuid.UUID(i) for i in ids)
    assert set(ids).isdisjoint(r["id"] for r in ROWS[:2])
    assert [r["source"] for r in moved[:2]] == ["k:1", "k:2"]  # keys kept
    assert (moved[2]["source"], moved[2]["target"]) == tuple(ids)  # the link follows its ends
    assert resalted(ROWS, "hybrid") == moved  # deterministic
    assert resalted(ROWS, "plain")[0]["id"] != ids[0]  # another salt, other ids
    assert ROWS[0]["id"] == "11111111-1111-1111-1111-111111111111"  # input untouched
