"""Answerability (recall.answerability): the evidence a ranking carries that memory holds the
answer, and the probability a model makes of it. Pure functions: memories built directly."""

from __future__ import annotations

import math
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from graphsvc.embedding.registry import PACKAGED_MODELS, Answerability
from graphsvc.recall import Scored
from graphsvc.recall.answerability import (
    LEXICAL,
    MARGIN_RANK,
    Evidence,
    agreement,
    evidence_of,
    probability,
    unseen_share,
)
from graphsvc.store.candidates import TermStats
from tests.unit.test_recall import mem

FAST = hsettings(max_examples=200, deadline=None)
UNIT = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
FEATURES = ("coverage", "unseen", "bm25", "cosine", "agreement", "attribution", "margin")


def ids(*numbers: int) -> list[UUID]:
    return [UUID(int=n) for n in numbers]


def test_agreement_is_one_over_the_first_depth_both_rankings_share() -> None:
    assert agreement(ids(1, 2, 3), ids(1, 5, 6)) == 1.0  # the same memory first in both
    assert agreement(ids(1, 2, 3), ids(4, 2, 1)) == 0.5  # memory 2 is second in both
    assert agreement(ids(1, 2, 3), ids(4, 5, 1)) == round(1 / 3, 6)  # 1 is 1st and 3rd
    assert agreement(ids(1, 2), ids(3, 4)) == 0.0  # nothing in both
    assert agreement([], ids(1)) == agreement(ids(1), []) == 0.0


@FAST
@given(
    st.lists(st.integers(1, 30), unique=True, max_size=12),
    st.lists(st.integers(1, 30), unique=True, max_size=12),
)
def test_agreement_is_the_best_joint_rank_of_a_shared_memory(a: list[int], b: list[int]) -> None:
    joint = [max(a.index(m), b.index(m)) + 1 for m in set(a) & set(b)]
    expected = round(1 / min(joint), 6) if joint else 0.0
    assert agreement(ids(*a), ids(*b)) == expected == agreement(ids(*b), ids(*a))


def test_an_unseen_word_weighs_the_most_in_the_unseen_share() -> None:
    stats = TermStats(n_docs=20, total_length=100, df={"payment": 3, "team": 5})
    assert unseen_share(["payment", "team"], stats) == 0.0
    share = unseen_share(["payment", "team", "iguana"], stats)
    w = [stats.coverage_weight(t) for t in ("payment", "team", "iguana")]
    assert share == round(w[2] / sum(w), 6)
    assert w[2] > max(w[:2])  # ln(2N + 2): more than any word memory holds
    assert unseen_share([], stats) == 0.0


def scored(n: int, score: float, evidence: float) -> Scored:
    return Scored(mem(n, f"alpha memory {n}"), score, ("alpha",), evidence)


def test_evidence_reads_the_best_of_each_signal() -> None:
    stats = TermStats(n_docs=10, total_length=40, df={"alpha": 3})
    lexical = [scored(1, 0.6, 0.5), scored(2, 0.4, 0.7), scored(3, 0.2, 0.1)]
    cosine = {UUID(int=n): 0.05 * n for n in range(1, 13)}  # 12 is the nearest by meaning
    found = evidence_of(["alpha", "zulu"], stats, lexical, 0.875, cosine)
    assert found.coverage == 0.7 and found.bm25 == 0.6
    assert found.attribution == 0.8  # 0.7 of the best coverage before attribution, 0.875
    assert found.cosine == 0.6
    assert found.margin == round(0.6 - 0.05 * (13 - MARGIN_RANK), 6)  # the tenth best: 3
    assert found.agreement == round(1 / 10, 6)  # memory 3: lexically 3rd, 10th by meaning
    assert found.unseen == unseen_share(["alpha", "zulu"], stats)
    # Lexical recall: no cosine, no agreement, no margin.
    plain = evidence_of(["alpha"], stats, lexical, 0.7)
    assert (plain.cosine, plain.agreement, plain.margin, plain.attribution) == (0, 0, 0, 1.0)
    # Nothing found at all.
    empty = evidence_of(["zulu"], stats, [], 0.0)
    assert (empty.coverage, empty.bm25, empty.unseen, empty.attribution) == (0, 0, 1.0, 1.0)


def test_probability_is_the_logistic_of_the_named_evidence() -> None:
    model = Answerability(intercept=-1.0, coverage=2.0, cosine=3.0, agreement=-0.5)
    evidence = Evidence(coverage=0.5, cosine=0.4, agreement=1.0)
    z = -1.0 + 2.0 * 0.5 + 3.0 * 0.4 - 0.5 * 1.0
    assert probability(evidence, model) == round(1 / (1 + math.exp(-z)), 6)
    assert probability(Evidence(), Answerability(intercept=0.0)) == 0.5
    # Far out either way it stays a probability.
    assert probability(Evidence(coverage=1.0), Answerability(0.0, coverage=1e4)) == 1.0
    assert probability(Evidence(coverage=1.0), Answerability(0.0, coverage=-1e4)) == 0.0


@FAST
@given(
    st.fixed_dictionaries(dict.fromkeys(FEATURES, UNIT)),
    st.sampled_from(FEATURES),
    UNIT,
)
def test_probability_moves_with_each_coefficient_s_sign(
    values: dict[str, float], feature: str, more: float
) -> None:
    """More of a feature with a positive coefficient never lowers the probability, and more of
    one with a negative coefficient never raises it; every model of the registry gives a
    probability in [0, 1]."""
    base = Evidence(**values)
    raised = Evidence(**{**values, feature: max(values[feature], more)})
    models = [LEXICAL] + [m.answerability for m in PACKAGED_MODELS.values() if m.answerability]
    for model in models:
        low, high = probability(base, model), probability(raised, model)
        assert 0.0 <= low <= 1.0 and 0.0 <= high <= 1.0
        coefficient = getattr(model, feature)
        if coefficient > 0:
            assert high >= low
        elif coefficient < 0:
            assert high <= low
        else:
            assert high == low


def test_every_encoder_of_the_registry_has_its_own_fitted_model() -> None:
    for spec in PACKAGED_MODELS.values():
        assert spec.answerability is not None, spec.name
        assert spec.answerability != LEXICAL


@pytest.mark.parametrize("feature", FEATURES)
def test_every_feature_has_a_coefficient_and_a_bundle_field(feature: str) -> None:
    assert hasattr(Answerability(0.0), feature)
    assert feature in Evidence.model_fields
