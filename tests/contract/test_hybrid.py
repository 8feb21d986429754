"""Hybrid recall through the service, one body over both stores, with the real encoder.

Words, graph and meaning: a memory that shares no word with the query is found by meaning; the
lexical core still decides abstention; a namespace whose vectors come from another model is
answered lexically (and says so) until ``embed --rebuild`` replaces them; memories written while
dense recall was off are encoded by ``embed``, resumably.
"""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import OnnxEmbedder
from graphsvc.embedding.registry import MINILM_INT8, PACKAGED_MODELS, ModelUnavailableError
from graphsvc.errors import BadInputError
from graphsvc.model import ContextBundle, MemoryInput
from graphsvc.recall import STAGES
from graphsvc.recall.answerability import probability
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from tests.helpers import fixed_clock, make_settings

PETS = [
    "My puppy keeps chewing the sofa cushions whenever I leave the flat.",
    "The quarterly tax return is due at the end of April.",
    "We planted tomatoes and basil in the back garden on Sunday.",
    "The train to Lyon was cancelled because of the strike.",
]


@pytest.fixture(scope="session")
def encoder() -> OnnxEmbedder:
    try:
        return OnnxEmbedder(MINILM_INT8).load()
    except ModelUnavailableError as exc:  # pragma: no cover - the weights are a CI install step
        pytest.fail(f"the embedding model is not installed ({exc}): bash scripts/install_model.sh")


@pytest.fixture
def hybrid(store: Store, tmp_path: Path, encoder: OnnxEmbedder) -> MemoryService:
    return MemoryService(
        store, inline_settings(tmp_path), clock=fixed_clock(), dense=DenseRecall(encoder)
    )


def inline_settings(tmp_path: Path, **changes: object) -> Settings:
    """Settings whose writes store their vectors in the write (GRAPHSVC_EMBED_WRITES=inline):
    these tests are about ranking, so a bundle right after a write sees every vector (the
    vector queue's own tests are in test_vector_queue.py)."""
    return make_settings(tmp_path, embed_writes="inline", **changes)


def remember(service: MemoryService, ns: str, texts: list[str]) -> None:
    service.remember_many(ns, [MemoryInput(text=t) for t in texts])


def test_finds_by_meaning_what_shares_no_word(hybrid: MemoryService, ns: str) -> None:
    remember(hybrid, ns, PETS)
    result = hybrid.bundle(ns, "dog destroying furniture", min_score=0.0)
    assert result.retrieval == "hybrid"
    assert result.capsules, "the memory about the puppy and the sofa should be found by meaning"
    assert "puppy" in result.capsules[0].text
    # No query word occurs in memory: the lexical evidence is 0, the cosine is not.
    evidence = result.answer_evidence
    assert (evidence.coverage, evidence.bm25) == (0.0, 0.0) and evidence.cosine > 0.0


def test_a_small_namespace_keeps_both_of_two_matches(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, ns: str
) -> None:
    # Min-max fusion, fewer vectors than dense_k: no baseline for min-max, so the weaker match
    # is fused relatively and stays above the floor, as it does lexically.
    settings = inline_settings(tmp_path, fusion_mode="minmax", dense_k=40, dense_weight=0.7)
    hybrid = MemoryService(store, settings, clock=fixed_clock(), dense=DenseRecall(encoder))
    remember(hybrid, ns, [PETS[1], "The tax office moved the return deadline to May."])
    result = hybrid.bundle(ns, "when is the tax return due")
    assert len(result.capsules) == 2, result.excluded


@pytest.mark.parametrize("model", sorted(PACKAGED_MODELS))
def test_every_encoder_finds_the_match_alone_in_a_small_namespace(
    store: Store, tmp_path: Path, ns: str, model: str
) -> None:
    # Some encoders put any two English texts at a cosine of 0.7 or more; read raw, each of the
    # four memories would score near the best and all would be packed.
    try:
        encoder = OnnxEmbedder(PACKAGED_MODELS[model]).load()
    except ModelUnavailableError as exc:  # pragma: no cover - the weights are a CI install step
        pytest.fail(f"{model} is not installed ({exc}): bash scripts/install_model.sh --all")
    hybrid = MemoryService(
        store, inline_settings(tmp_path), clock=fixed_clock(), dense=DenseRecall(encoder)
    )
    remember(hybrid, ns, PETS)
    found = hybrid.bundle(ns, "dog destroying furniture", min_score=0.0)
    assert [c.text for c in found.capsules] == [PETS[0]], found.excluded
    assert hybrid.bundle(ns, "quantum chromodynamics lattice gauge", min_score=0.0).capsules == ()


def test_lexical_recall_misses_it(service: MemoryService, hybrid: MemoryService, ns: str) -> None:
    remember(service, ns, PETS)
    result = service.bundle(ns, "dog destroying furniture")
    assert result.retrieval == "lexical"
    assert result.capsules == ()


def test_abstention_is_on_by_default_and_reads_answerability(
    hybrid: MemoryService, ns: str
) -> None:
    # topScore is the encoder's answerability model over the bundle's named evidence.
    remember(hybrid, ns, PETS)
    result = hybrid.bundle(ns, "dog destroying furniture")
    assert result.min_score == STAGES["default"].min_score > 0.0
    model = MINILM_INT8.answerability
    assert model is not None
    assert result.top_score == probability(result.answer_evidence, model)
    assert result.skipped == (result.top_score < result.min_score)


def test_a_weak_match_by_meaning_alone_is_abstained_on(hybrid: MemoryService, ns: str) -> None:
    # MiniLM's model trusts a cosine of about 0.5 with no word in common little: the puppy
    # memory is ranked, and the bundle abstains.
    remember(hybrid, ns, PETS)
    result = hybrid.bundle(ns, "dog destroying furniture", min_score=0.2)
    assert result.top_score < 0.2
    assert result.skipped
    assert result.capsules == ()
    assert {c.reason for c in result.excluded} == {"abstained"}


def test_nothing_found_holds_no_answer(hybrid: MemoryService, ns: str) -> None:
    remember(hybrid, ns, PETS)
    result = hybrid.bundle(ns, "quantum chromodynamics lattice gauge")
    assert result.top_score == 0.0 and result.skipped
    # With abstention off (minScore 0) the bundle is not skipped: it is empty and says why.
    off = hybrid.bundle(ns, "quantum chromodynamics lattice gauge", min_score=0.0)
    assert off.top_score == 0.0 and not off.skipped and off.capsules == ()
    assert "holds nothing that matches" in off.rendered


def test_strangers_do_not_join_on_meaning(hybrid: MemoryService, ns: str) -> None:
    remember(hybrid, ns, PETS)
    result = hybrid.bundle(ns, "quantum chromodynamics lattice gauge", min_score=0.0)
    assert result.capsules == ()


def test_fusion_keeps_word_matches_first_and_scores_stay_in_range(
    hybrid: MemoryService, ns: str
) -> None:
    remember(hybrid, ns, PETS)
    result = hybrid.bundle(ns, "when is the tax return due")
    assert "tax return" in result.capsules[0].text
    assert all(0.0 <= c.score <= 1.0 for c in result.capsules + result.excluded)
    stats = hybrid.stats(ns)
    assert (stats.vectors, stats.memories, stats.retrieval) == (4, 4, "hybrid")
    assert stats.embed_model == hybrid.dense.status().model
    assert stats.retrieval_note is None


def test_reconstruct_uses_meaning_too(hybrid: MemoryService, ns: str) -> None:
    remember(hybrid, ns, PETS)
    belief = hybrid.reconstruct(ns, "dog destroying furniture", k=1)
    assert [m.text for m in belief.memories[:1]] == [PETS[0]]


def test_backfill_encodes_what_was_written_lexically(
    service: MemoryService, hybrid: MemoryService, ns: str
) -> None:
    remember(service, ns, PETS)  # written with dense recall off: no vectors
    stats = hybrid.stats(ns)
    assert stats.vectors == 0
    assert (
        hybrid.bundle(ns, "dog destroying furniture", min_score=0.0).capsules == ()
    )  # no vector yet
    seen: list[int] = []
    assert hybrid.embed(ns, batch=3, progress=seen.append) == 4
    assert seen == [3, 1]
    assert hybrid.embed(ns) == 0  # resumable: nothing left to do
    stats = hybrid.stats(ns)
    assert (stats.vectors, stats.retrieval, stats.retrieval_note) == (4, "hybrid", None)
    assert "puppy" in hybrid.bundle(ns, "dog destroying furniture", min_score=0.0).capsules[0].text


def test_partial_vectors_are_reported(
    service: MemoryService, hybrid: MemoryService, ns: str
) -> None:
    remember(hybrid, ns, PETS[:2])
    remember(service, ns, PETS[2:])
    note = hybrid.stats(ns).retrieval_note
    assert note is not None and "2 memory(ies) wait for their vector" in note
    assert "graphsvc embed" in note
    assert hybrid.stats(ns).pending_vectors == 2


def test_another_model_is_never_mixed(
    store: Store, tmp_path: Path, hybrid: MemoryService, ns: str
) -> None:
    remember(hybrid, ns, PETS)
    # The same weights cut at another length are another model (another model_id).
    other = OnnxEmbedder(MINILM_INT8, max_length=64)
    changed = MemoryService(
        store, inline_settings(tmp_path), clock=fixed_clock(), dense=DenseRecall(other)
    )
    stats = changed.stats(ns)
    assert stats.retrieval == "lexical"
    assert stats.retrieval_note is not None and "embed --rebuild" in stats.retrieval_note
    assert changed.bundle(ns, "dog destroying furniture").retrieval == "lexical"
    # A write under the other model stores no vector of it.
    changed.remember(ns, MemoryInput(text="The cat sleeps on the radiator all afternoon."))
    assert changed.stats(ns).vectors == 4
    with pytest.raises(BadInputError, match="pass --rebuild"):
        changed.embed(ns)
    assert changed.embed(ns, rebuild=True) == 5
    stats = changed.stats(ns)
    assert (stats.retrieval, stats.vectors, stats.embed_model) == ("hybrid", 5, other.model_id)
    # And now the first model's service is the one that must rebuild.
    assert hybrid.stats(ns).retrieval == "lexical"


def test_embed_refuses_without_an_encoder(service: MemoryService, ns: str) -> None:
    remember(service, ns, PETS[:1])
    with pytest.raises(BadInputError, match="dense recall is off"):
        service.embed(ns)


def test_settings_choose_the_encoder(tmp_path: Path) -> None:
    off = DenseRecall.from_settings(Settings(data_dir=tmp_path, embed="off"))
    assert off.status().retrieval == "lexical"
    assert "GRAPHSVC_EMBED=off" in str(off.status().reason)
    missing = tmp_path / "no-model"
    auto = DenseRecall.from_settings(
        Settings(data_dir=tmp_path, embed="auto", embed_model_dir=missing)
    )
    status = auto.status()
    assert status.retrieval == "lexical"
    assert status.reason is not None and str(missing) in status.reason
    required = DenseRecall.from_settings(
        Settings(data_dir=tmp_path, embed="on", embed_model_dir=missing)
    )
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        required.prepare()


def test_same_query_same_bytes(hybrid: MemoryService, ns: str) -> None:
    remember(hybrid, ns, PETS)
    first = hybrid.bundle(ns, "garden vegetables").model_dump_json()
    for _ in range(3):
        assert hybrid.bundle(ns, "garden vegetables").model_dump_json() == first


def test_searching_by_meaning_beside_the_lexical_ranking_answers_the_same(
    hybrid: MemoryService, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neo4j searches by meaning on a thread of its own while the bundle ranks lexically
    (Store.overlapped_reads); run that way or in turn, on either store, the bytes are the same."""
    remember(hybrid, ns, [*PETS, *CHAT])
    queries = ["dog destroying furniture", "garden vegetables", "the puppy", "tax due", "trains"]
    answers = {}
    for overlapped in (True, False):
        monkeypatch.setattr(hybrid.store, "overlapped_reads", overlapped)
        answers[overlapped] = [hybrid.bundle(ns, q).model_dump_json() for q in queries] + [
            hybrid.reconstruct(ns, q).model_dump_json() for q in queries
        ]
    assert answers[True] == answers[False]


CHAT = [
    "Did you finally adopt the puppy from the shelter last month?",
    "Yes, we picked him up in May.",
    "The quarterly tax return is due at the end of April.",
    "The train to Lyon was cancelled because of the strike.",
    "We planted tomatoes and basil in the back garden on Sunday.",
]


def hybrid_with(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, **changes: object
) -> MemoryService:
    settings = inline_settings(tmp_path, **changes)
    return MemoryService(store, settings, clock=fixed_clock(), dense=DenseRecall(encoder))


LONG_REPLY = (
    "Here is a long overview of moving house: book the removal van early, label every box by "
    "room, keep the dog calm on the day with a familiar blanket, measure the doorways for the "
    "sofa, register with a new doctor, update your address with the bank, cancel the old "
    "broadband contract, read the meters on the last morning, and make sure the name on every "
    "utility account is right before the first bill arrives."
)
SHORT_FACT = "Our dog's name is Biscuit."
OTHERS = [
    "The boiler was serviced in March.",
    "We bought a blue sofa from the market.",
    "The bank opens at nine on Saturdays.",
    "My sister lives near the station.",
]


def ranking(result: ContextBundle) -> list[UUID]:
    return [
        c.memory_id for c in sorted((*result.capsules, *result.excluded), key=lambda c: -c.score)
    ]


def test_a_length_prior_ranks_a_short_fact_above_a_long_reply_and_leaves_top_score(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, ns: str
) -> None:
    # BM25 without its own length normalisation, so that only the prior reads length.
    off = hybrid_with(store, tmp_path, encoder, fused_length_b=0.0, bm25_b=0.0)
    texts = [LONG_REPLY, SHORT_FACT, *OTHERS]
    long_id, short_id, *_ = [
        m.id for m in off.remember_many(ns, [MemoryInput(text=t) for t in texts])
    ]
    # The long reply covers more query words (name, dog, new, house) than the fact (name, dog).
    query = "what name did we give the dog in the new house"
    before = off.bundle(ns, query)
    assert ranking(before)[:2] == [long_id, short_id]
    on = hybrid_with(store, tmp_path, encoder, fused_length_b=1.0, bm25_b=0.0)
    after = on.bundle(ns, query)
    assert ranking(after)[:2] == [short_id, long_id]
    # Answerability reads the lexical-graph ranking before fusion: the prior never moves it.
    assert after.top_score == before.top_score
    assert after.answer_evidence == before.answer_evidence
    assert on.bundle(ns, query).model_dump_json() == after.model_dump_json()
