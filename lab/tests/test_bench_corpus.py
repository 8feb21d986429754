"""The benchmark's synthetic corpus (deterministic, built lazily from compact arrays) and its report
helpers. No timing is asserted: the bench measures, tests only check what it measures on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import click
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsvc.model import LinkKind, MemoryInput
from graphsvc.text import analyse
from graphsvc_lab.bench import (
    Target,
    Timed,
    WordHashEmbedder,
    _timings,
    fit_tokens,
    make_corpus,
    render_table,
    time_paired,
)


def corpus_key(seed: int, n: int = 400) -> tuple[object, ...]:
    corpus = make_corpus(seed, n, 30, 500, links_per_memory=1.0)
    return (
        corpus.vocabulary,
        tuple(m.model_dump_json() for m in corpus.memories),
        tuple(corpus.links),
        corpus.queries,
    )


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another() -> None:
    assert corpus_key(7) == corpus_key(7)
    assert corpus_key(7) != corpus_key(8)


def test_memories_are_built_on_demand_and_index_like_a_sequence() -> None:
    corpus = make_corpus(3, 50, 5, 300, links_per_memory=1.0)
    memories = corpus.memories
    assert len(memories) == len(corpus) == 50
    every = list(memories)
    assert all(isinstance(m, MemoryInput) for m in every)
    assert memories[0] == corpus.memory(0) == every[0]
    assert memories[-1] == every[49]
    assert memories[10:13] == every[10:13]
    assert memories[45:100] == every[45:]
    assert memories[::10] == every[::10]
    assert [corpus.text(i) for i in range(50)] == [m.text for m in every] == list(corpus.texts())
    with pytest.raises(IndexError):
        memories[50]
    with pytest.raises(IndexError):
        memories[-51]


def test_memories_look_like_the_documented_corpus() -> None:
    corpus = make_corpus(5, 300, 5, 400, links_per_memory=1.0)
    vocabulary = set(corpus.vocabulary)
    times = [m.occurred_at for m in corpus.memories if m.occurred_at is not None]
    assert len(times) == 300 and times == sorted(times)  # written in the order they happened
    for i, memory in enumerate(corpus.memories):
        content = corpus.content(i)
        assert 8 <= len(content) <= 40
        assert set(content) <= vocabulary
        assert memory.text[0].isupper() and memory.text.endswith(".")
        assert len(memory.text[:-1].split()) == len(content)
        assert len(set(memory.tags)) == len(memory.tags) <= 2
    kinds = Counter(m.kind for m in corpus.memories)
    assert kinds.most_common(1)[0][0] == "observation"
    # Every word of the vocabulary has its own stem, so the analyser sees distinct terms.
    stems = [analyse(word) for word in corpus.vocabulary]
    assert all(len(s) == 1 for s in stems)
    assert len({s[0] for s in stems}) == len(stems)


def test_links_join_distinct_positions_in_the_documented_directions() -> None:
    corpus = make_corpus(9, 2_000, 5, 500, links_per_memory=1.0)
    links = corpus.links
    assert 0.95 * 2_000 <= len(links) <= 2_000
    assert list(links) == [links[i] for i in range(len(links))] == links[:]
    assert links[-1] == links[len(links) - 1]
    assert len(set(links)) == len(links)
    kinds = Counter(kind for _, _, kind in links)
    assert set(kinds) == {
        LinkKind.CAUSES,
        LinkKind.RELATES_TO,
        LinkKind.PRECEDES,
        LinkKind.SUPERSEDES,
    }
    for source, target, kind in links:
        assert source != target
        assert 0 <= source < 2_000 and 0 <= target < 2_000
        if kind is LinkKind.PRECEDES:
            assert source < target  # to a later memory
        if kind is LinkKind.SUPERSEDES:
            assert source > target  # newer -> older: never a cycle
    with pytest.raises(IndexError):
        links[len(links)]


def test_a_query_is_mostly_words_of_its_source_memory() -> None:
    corpus = make_corpus(4, 500, 40, 800, links_per_memory=1.0)
    assert len(corpus.queries) == 40
    for query in corpus.queries:
        assert query.text.endswith("?")
        words = query.text[:-1].split()
        own = set(corpus.content(query.source))
        from_source = sum(w in own for w in words)
        assert 3 <= len(words) <= 9
        assert from_source >= len(words) - 3  # one or two others, and maybe "before"/"when"


def test_tiny_corpora_have_no_links() -> None:
    corpus = make_corpus(1, 1, 3, 100, links_per_memory=1.0)
    assert len(corpus) == 1 and len(corpus.links) == 0
    assert {q.source for q in corpus.queries} == {0}


def test_timings_give_percentiles_and_the_spread_of_the_rounds() -> None:
    figures: dict[str, float] = {}
    wall = [[0.001, 0.002, 0.003], [0.004, 0.005, 0.006]]
    _timings(figures, "bundle", Timed(wall, [[0.001, 0.001, 0.001], [0.002, 0.002, 0.002]]))
    assert figures["bundle_p50_ms"] == pytest.approx(3.5)
    assert figures["bundle_cpu_p50_ms"] == pytest.approx(1.5)
    assert figures["bundle_p50_min_ms"] == pytest.approx(2.0)
    assert figures["bundle_p50_max_ms"] == pytest.approx(5.0)
    once: dict[str, float] = {}
    _timings(once, "native_top10", Timed([[0.001, 0.003]], [[0.001, 0.001]]))
    assert once["native_top10_p50_ms"] == pytest.approx(2.0)
    assert "native_top10_p50_min_ms" not in once


def test_paired_timing_takes_turns_query_by_query() -> None:
    log: list[tuple[str, str]] = []

    def call(name: str) -> Callable[[str], str]:
        def run(query: str) -> str:
            log.append((name, query))
            return f"{name}:{query}"

        return run

    timed, results = time_paired([call("a"), call("b")], ["q1", "q2", "q3"], 1, 2, "test")
    # The warm-up query through both, then each round: query by query, the order rotating.
    round_order = [("a", "q1"), ("b", "q1"), ("b", "q2"), ("a", "q2"), ("a", "q3"), ("b", "q3")]
    assert log == [("a", "q1"), ("b", "q1"), *round_order, *round_order]
    assert [len(t.wall) for t in timed] == [2, 2]
    assert all(len(r) == 3 for t in timed for r in (*t.wall, *t.cpu))
    assert results == ["a:q1", "a:q2", "a:q3"]  # the first call's, in query order


def test_the_table_shows_values_spreads_and_missed_targets() -> None:
    figures = {"bundle_p50_ms": 4.0, "bundle_p50_min_ms": 3.5, "bundle_p50_max_ms": 6.25}
    figures["restart_s"] = 12.0
    lines = render_table(figures, [Target("restart_s", 10.0, at_least=False)])
    bundle = next(line for line in lines if line.startswith("bundle p50"))
    assert "4.00" in bundle and "3.50-6.25" in bundle
    restart = next(line for line in lines if line.startswith("restart: open + first"))
    assert restart.endswith("NO") and "<= 10.00" in restart
    assert Target("ingest_memories_per_s", 150, at_least=True).met(150)


def test_word_hash_vectors_are_unit_deterministic_and_near_for_shared_terms() -> None:
    embedder = WordHashEmbedder(dimension=64)
    texts = ["Billing invoice failed", "the billing invoice failed again", "Kernel panic on boot"]
    first = embedder.embed(texts)
    again = WordHashEmbedder(dimension=64).embed(texts[::-1])[::-1]
    assert first.shape == (3, 64) and first.dtype == np.float32
    assert np.array_equal(first, again)  # per text, whatever it is batched with
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    assert first[0] @ first[1] > 0.9 > abs(first[0] @ first[2])
    assert embedder.model_id == "bench-word-hash-64" and embedder.dimension == 64


@given(
    body=st.lists(st.integers(min_value=5, max_value=30_000), min_size=1, max_size=60),
    tokens=st.integers(min_value=0, max_value=80),
)
def test_fit_tokens_keeps_the_markers_and_only_the_texts_own_ids(
    body: list[int], tokens: int
) -> None:
    ids = [101, *body, 102]
    if tokens == 1:
        with pytest.raises(click.BadParameter, match="cannot make"):
            fit_tokens(ids, tokens)
        return
    fitted = fit_tokens(ids, tokens)
    if tokens == 0:
        assert fitted == ids
    else:
        assert len(fitted) == tokens
        assert fitted[0] == 101 and fitted[-1] == 102
        assert set(fitted[1:-1]) <= set(body)
        assert fitted[1 : min(tokens, len(ids)) - 1] == body[: min(tokens, len(ids)) - 2]


def test_fit_tokens_refuses_a_length_that_cannot_hold_the_markers() -> None:
    with pytest.raises(click.BadParameter, match="cannot make 4 token ids 1 long"):
        fit_tokens([101, 7, 8, 102], 1)
