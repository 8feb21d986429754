"""The store's vectors (dense recall), on every store with one test body.

Every answer of :meth:`Store.similar` is compared, float for float, with what
:func:`graphsvc.embedding.codes.cosines` and :func:`graphsvc.embedding.codes.top_k` give for the
vectors the test wrote: both stores must return those very bits. Vectors are realistic (the codes of
random unit vectors of dimension 384, seeded) or made by hand where the exact cosine is known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import numpy as np
import pytest

from graphsvc.embedding.codes import VectorModel, cosines, quantize, to_bytes, top_k
from graphsvc.errors import BadInputError
from graphsvc.model import EraseFilter, Memory
from graphsvc.store.base import Store
from graphsvc.text import analyse, estimate_tokens

BASE = datetime(2025, 1, 1, tzinfo=UTC)
DIM = 384
MODEL = VectorModel("test-encoder-384", DIM)
OTHER_MODEL = VectorModel("test-encoder-8", 8)
CAP = 10_000


def memory(ns: str, n: int, *, tags: tuple[str, ...] = (), mid: UUID | None = None) -> Memory:
    text = f"memory number {n} about vectors"
    return Memory(
        id=mid or uuid4(),
        namespace=ns,
        text=text,
        kind="note",
        recorded_at=BASE + timedelta(seconds=n),
        tags=tags,
        tokens=estimate_tokens(text),
        terms=tuple(analyse(text)),
    )


def memories(ns: str, count: int, *, tags: tuple[str, ...] = ()) -> list[Memory]:
    return [memory(ns, n, tags=tags) for n in range(count)]


def random_codes(count: int, seed: int, dimension: int = DIM) -> list[bytes]:
    """The codes of ``count`` random unit vectors (seeded)."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((count, dimension)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return [to_bytes(row) for row in quantize(rows)]


def axis(*weights: tuple[int, int]) -> bytes:
    """Hand-made codes: ``(component, value)`` pairs, every other component 0."""
    codes = np.zeros(DIM, dtype=np.int8)
    for component, value in weights:
        codes[component] = value
    return to_bytes(codes)


def expected(
    query: bytes, stored: Mapping[UUID, bytes], k: int, ids: Sequence[UUID] = ()
) -> list[tuple[UUID, float]]:
    """What ``similar`` must answer, from cosines and top_k over what was stored."""
    if not stored:
        return []
    order = list(stored)
    matrix = np.stack([np.frombuffer(stored[i], dtype=np.int8) for i in order])
    scores = cosines(np.frombuffer(query, dtype=np.int8), matrix)
    found = dict(top_k(order, scores, k))
    for mid in ids:
        if mid in stored and mid not in found:
            found[mid] = float(scores[order.index(mid)])
    return sorted(found.items(), key=lambda pair: (-pair[1], pair[0]))


def write(
    store: Store, ns: str, items: Sequence[Memory], vectors: Mapping[UUID, bytes] | None = None
) -> None:
    store.upsert_memories(ns, items, max_memories=CAP, vectors=vectors)


def without(store: Store, ns: str, limit: int = 1000) -> list[UUID]:
    """The memories that wait for a vector (the vector queue), by id."""
    return sorted((m.id for m in store.pending_vectors(ns, limit)), key=str)


# -- the vector model ----------------------------------------------------------------------------


def test_the_vector_model_is_per_namespace_and_never_mixes_two_models(
    store: Store, ns: str
) -> None:
    other = f"{ns}-b"
    assert store.vector_model(ns) is None
    store.set_vector_model(ns, MODEL)
    store.set_vector_model(ns, MODEL)  # the model in force: nothing to do
    assert store.vector_model(ns) == MODEL
    assert store.vector_model(other) is None
    store.set_vector_model(other, OTHER_MODEL)  # another namespace, another dimension
    assert (store.vector_model(ns), store.vector_model(other)) == (MODEL, OTHER_MODEL)

    # With no vector stored, the model may change freely.
    store.set_vector_model(ns, OTHER_MODEL)
    store.set_vector_model(ns, MODEL)
    stored = memories(ns, 3)
    write(store, ns, stored, {stored[0].id: random_codes(1, 1)[0]})

    with pytest.raises(BadInputError, match="test-encoder-8") as info:
        store.set_vector_model(ns, OTHER_MODEL)
    assert "clear_vectors" in str(info.value)
    assert store.vector_model(ns) == MODEL

    # None (being replaced) may be set at any time; the vectors stay until cleared, and no model
    # may be declared over them, not even the one they came from.
    store.set_vector_model(ns, None)
    assert store.vector_model(ns) is None
    assert store.vector_count(ns) == 1
    with pytest.raises(BadInputError, match="test-encoder-384"):
        store.set_vector_model(ns, MODEL)
    assert store.similar(ns, random_codes(1, 2)[0], 5, [stored[0].id]) == []
    with pytest.raises(BadInputError, match="no vector model"):
        store.set_vectors(ns, {stored[1].id: random_codes(1, 3)[0]})

    assert store.clear_vectors(ns, 10) == 1
    assert store.clear_vectors(ns, 10) == 0
    store.set_vector_model(ns, OTHER_MODEL)
    assert store.vector_model(ns) == OTHER_MODEL
    assert store.vector_count(ns) == 0
    assert len(store.get_memories(ns, [m.id for m in stored])) == 3  # memories are untouched


# -- writing vectors -----------------------------------------------------------------------------


def test_upsert_stores_vectors_with_their_memories(store: Store, ns: str) -> None:
    store.set_vector_model(ns, MODEL)
    stored = memories(ns, 6)
    codes = random_codes(7, 10)
    given = {m.id: codes[i] for i, m in enumerate(stored[:4])}
    write(store, ns, stored, given)
    assert store.vector_count(ns) == 4
    assert without(store, ns) == sorted((m.id for m in stored[4:]), key=str)
    query = codes[0]
    assert store.similar(ns, query, 10, []) == expected(query, given, 10)

    # Resent unchanged: a memory with a vector keeps it; one without gets the one sent.
    resent = {stored[0].id: codes[6], stored[4].id: codes[4]}
    outcome = store.upsert_memories(ns, stored[:1] + stored[4:5], max_memories=CAP, vectors=resent)
    assert outcome.created == () and outcome.unchanged == (stored[0].id, stored[4].id)
    given[stored[4].id] = codes[4]
    assert store.vector_count(ns) == 5
    assert without(store, ns) == [stored[5].id]
    assert store.similar(ns, query, 10, []) == expected(query, given, 10)


def test_an_upsert_with_a_bad_vector_writes_nothing(store: Store, ns: str) -> None:
    stored = memories(ns, 3)
    codes = random_codes(3, 20)
    with pytest.raises(BadInputError, match="no vector model"):
        write(store, ns, stored, {stored[0].id: codes[0]})
    assert store.get_memories(ns, [m.id for m in stored]) == []

    store.set_vector_model(ns, MODEL)
    short = {stored[0].id: codes[0], stored[1].id: codes[1][:383]}
    with pytest.raises(BadInputError, match=r"383.*384") as info:
        write(store, ns, stored, short)
    assert str(stored[1].id) in str(info.value)
    assert store.get_memories(ns, [m.id for m in stored]) == []
    assert store.vector_count(ns) == 0

    write(store, ns, stored, {})  # no vector at all: fine, with or without a model
    assert store.vector_count(ns) == 0
    assert without(store, ns) == sorted((m.id for m in stored), key=str)


def test_set_vectors_replaces_and_skips_ids_the_namespace_does_not_hold(
    store: Store, ns: str
) -> None:
    other = f"{ns}-b"
    store.set_vector_model(ns, MODEL)
    store.set_vector_model(other, MODEL)
    stored = memories(ns, 5)
    foreign = memory(other, 99)
    write(store, ns, stored)
    write(store, other, [foreign])
    codes = random_codes(8, 30)

    batch = {stored[0].id: codes[0], stored[1].id: codes[1], uuid4(): codes[2]}
    batch[foreign.id] = codes[3]  # a memory of another namespace: skipped
    assert store.set_vectors(ns, batch) == 2
    assert store.vector_count(ns) == 2
    assert store.vector_count(other) == 0
    assert store.set_vectors(ns, {stored[0].id: codes[4], stored[2].id: codes[5]}) == 2
    assert store.vector_count(ns) == 3
    now = {stored[0].id: codes[4], stored[1].id: codes[1], stored[2].id: codes[5]}
    for query in (codes[0], codes[4], codes[7]):
        assert store.similar(ns, query, 10, []) == expected(query, now, 10)

    with pytest.raises(BadInputError, match=r"385.*384"):
        store.set_vectors(ns, {stored[3].id: codes[6], stored[4].id: codes[6] + b"\x01"})
    assert store.vector_count(ns) == 3  # all or nothing
    assert store.set_vectors(ns, {uuid4(): codes[6]}) == 0


def test_the_vector_queue_holds_the_memories_without_a_vector_oldest_first(
    store: Store, ns: str
) -> None:
    store.set_vector_model(ns, MODEL)
    stored = memories(ns, 23)
    codes = random_codes(len(stored), 40)
    with_vector = {m.id: codes[i] for i, m in enumerate(stored) if i % 3 == 0}
    write(store, ns, list(reversed(stored)), with_vector)  # written in any order
    waiting = [m for m in stored if m.id not in with_vector]  # recorded in this order
    head = store.pending_vectors(ns, 4)
    assert [(p.id, p.text) for p in head] == [(m.id, m.text) for m in waiting[:4]]
    assert [p.recorded_us for p in head] == [
        (m.recorded_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
        for m in waiting[:4]
    ]
    assert [p.id for p in store.pending_vectors(ns, 100)] == [m.id for m in waiting]
    assert store.pending_vectors(ns, 0) == []
    assert store.pending_vectors(f"{ns}-empty", 10) == []


def test_clear_vectors_works_in_atomic_batches(store: Store, ns: str) -> None:
    store.set_vector_model(ns, MODEL)
    stored = memories(ns, 12)
    write(store, ns, stored, dict(zip([m.id for m in stored], random_codes(12, 50), strict=True)))
    assert store.vector_count(ns) == 12
    removed = []
    for _ in range(4):
        removed.append(store.clear_vectors(ns, 5))
        assert store.vector_count(ns) == 12 - sum(removed)
        assert len(without(store, ns)) == sum(removed)
    assert removed == [5, 5, 2, 0]
    assert store.vector_model(ns) == MODEL
    assert len(store.get_memories(ns, [m.id for m in stored])) == 12
    assert store.similar(ns, random_codes(1, 51)[0], 5, [m.id for m in stored]) == []


def test_namespaces_lists_the_ones_holding_memories(store: Store, ns: str) -> None:
    second, model_only = f"{ns}-b", f"{ns}-c"
    write(store, second, [memory(second, 1)])
    write(store, ns, [memory(ns, 1)])
    store.set_vector_model(model_only, MODEL)
    names = store.namespaces()
    assert names == sorted(names)
    assert {ns, second} <= set(names)
    assert model_only not in names


# -- similar -------------------------------------------------------------------------------------


def test_similar_gives_the_exact_cosines_of_the_k_best_and_of_the_ids_asked(
    store: Store, ns: str
) -> None:
    store.set_vector_model(ns, MODEL)
    stored = memories(ns, 300)
    codes = random_codes(len(stored) + 5, 60)
    given = {m.id: codes[i] for i, m in enumerate(stored) if i % 7 != 3}
    write(store, ns, stored, given)
    no_vector = next(m.id for m in stored if m.id not in given)
    rng = np.random.default_rng(61)
    for trial, query in enumerate(codes[len(stored) :]):
        asked = [stored[int(i)].id for i in rng.choice(len(stored), 12, replace=False)]
        asked += [no_vector, uuid4()]
        k = [1, 5, 10, 25, 50][trial]
        answer = store.similar(ns, query, k, asked)
        assert answer == expected(query, given, k, asked)
        assert len({mid for mid, _ in answer}) == len(answer)
        assert no_vector not in dict(answer)
        assert all(type(score) is float for _, score in answer)
    stored_query = codes[0]  # a stored vector: its own cosine is exactly 1
    assert store.similar(ns, stored_query, 1, []) == [(stored[0].id, 1.0)]
    assert store.similar(ns, stored_query, 0, []) == []
    only_asked = store.similar(ns, stored_query, 0, [stored[1].id, stored[2].id])
    assert only_asked == expected(stored_query, given, 0, [stored[1].id, stored[2].id])
    everything = store.similar(ns, stored_query, 10_000, [])
    assert everything == expected(stored_query, given, len(given))
    assert len(everything) == len(given)


def test_similar_hand_made_cosines_and_ties_by_id(store: Store, ns: str) -> None:
    store.set_vector_model(ns, MODEL)
    stored = memories(ns, 8)
    ids = [m.id for m in stored]
    made = {
        ids[0]: axis((0, 127)),  # the query's direction: 1
        ids[1]: axis((0, 127), (1, 127)),  # 45 degrees: 1/sqrt(2)
        ids[2]: axis((0, 64), (1, 64)),  # the same direction, other lengths
        ids[3]: axis((0, -127)),  # opposite: -1
        ids[4]: axis((1, 127)),  # orthogonal: 0
        ids[5]: axis(),  # the zero vector: 0
        ids[6]: axis((0, 3), (1, 4)),  # 3/5
        ids[7]: axis((0, 127), (1, 127)),  # a tie with ids[1]
    }
    write(store, ns, stored, made)
    query = axis((0, 100))
    answer = store.similar(ns, query, 8, [])
    assert answer == expected(query, made, 8)
    half = 0.707107  # 1/sqrt(2) to 6 places
    assert answer == [
        (ids[0], 1.0),
        *((mid, half) for mid in sorted([ids[1], ids[2], ids[7]])),
        (ids[6], 0.6),
        *((mid, 0.0) for mid in sorted([ids[4], ids[5]])),
        (ids[3], -1.0),
    ]
    # The k-th place falls inside a tie: the smallest ids of the tie come out.
    assert store.similar(ns, query, 2, []) == answer[:2]
    assert store.similar(ns, query, 3, []) == answer[:3]
    # A zero query is orthogonal to everything: all ties, by id.
    assert store.similar(ns, axis(), 8, []) == [(mid, 0.0) for mid in sorted(ids)]


def test_similar_never_sees_another_namespace(store: Store, ns: str) -> None:
    other = f"{ns}-b"
    for space in (ns, other):
        store.set_vector_model(space, MODEL)
    mine = memories(ns, 20)
    theirs = memories(other, 20)
    shared = memory(other, 50, mid=mine[0].id)  # the same id in both namespaces
    codes = random_codes(45, 70)
    query = codes[44]
    my_vectors = {m.id: codes[i] for i, m in enumerate(mine)}
    their_vectors = {m.id: query for m in theirs}  # every one of them is the query itself
    their_vectors[shared.id] = query
    write(store, ns, mine, my_vectors)
    write(store, other, [*theirs, shared], their_vectors)
    asked = [m.id for m in theirs[:5]]
    answer = store.similar(ns, query, 5, [*asked, mine[0].id])
    assert answer == expected(query, my_vectors, 5, [mine[0].id])
    assert not {mid for mid, _ in answer} & {m.id for m in theirs}
    assert dict(answer)[mine[0].id] < 1.0  # this namespace's vector of the shared id
    assert store.similar(other, query, 3, [])[0][1] == 1.0


def test_similar_refuses_a_query_of_the_wrong_length(store: Store, ns: str) -> None:
    assert store.similar(ns, b"\x01" * 5, 3, []) == []  # no model: nothing, whatever the query
    store.set_vector_model(ns, MODEL)
    assert store.similar(ns, random_codes(1, 80)[0], 3, []) == []  # a model, no vector yet
    stored = memories(ns, 2)
    write(store, ns, stored, {stored[0].id: random_codes(1, 81)[0]})
    with pytest.raises(BadInputError, match=r"query.*383.*384"):
        store.similar(ns, random_codes(1, 82)[0][:383], 3, [])
    with pytest.raises(BadInputError, match=r"8.*384"):
        store.similar(ns, random_codes(1, 83, dimension=8)[0], 3, [])


# -- vectors go with their memory ----------------------------------------------------------------


def test_forget_erase_and_eviction_take_the_vector_with_the_memory(store: Store, ns: str) -> None:
    store.set_vector_model(ns, MODEL)
    stored = memories(ns, 10, tags=("keep",))
    doomed = memories(ns, 4, tags=("drop",))
    codes = random_codes(15, 90)
    vectors = {m.id: codes[i] for i, m in enumerate([*stored, *doomed])}
    write(store, ns, [*stored, *doomed], vectors)
    assert store.vector_count(ns) == 14
    query = codes[14]

    store.forget(ns, stored[0].id, at=BASE)
    store.erase(ns, EraseFilter(tag="drop"), at=BASE, batch_size=2)
    live = {m.id: vectors[m.id] for m in stored[1:]}
    assert store.vector_count(ns) == len(live)
    ids = [m.id for m in (*stored, *doomed)]
    assert store.similar(ns, query, 50, ids) == expected(query, live, 50, ids)
    # A memory written again under a forgotten or erased id starts without a vector.
    write(store, ns, [stored[0], doomed[0]])
    assert without(store, ns) == sorted([stored[0].id, doomed[0].id], key=str)
    assert store.vector_count(ns) == len(live)

    # Eviction at the cap: the oldest memories (recordedAt, then id) go, with their vectors.
    newest = [memory(ns, 100 + n) for n in range(3)]
    fresh = dict(zip([m.id for m in newest], random_codes(3, 91), strict=True))
    held = len(live) + 2
    result = store.upsert_memories(ns, newest, max_memories=held, vectors=fresh)
    evicted = set(result.evicted)
    assert evicted == {stored[0].id, doomed[0].id, stored[1].id}  # the three oldest
    live = {mid: codes for mid, codes in live.items() if mid not in evicted} | fresh
    assert store.vector_count(ns) == len(live)
    assert store.similar(ns, query, 50, list(evicted)) == expected(query, live, 50)
    write(store, ns, [stored[1]])
    assert stored[1].id in without(store, ns)

    store.erase(ns, EraseFilter(everything=True), at=BASE, batch_size=3)
    assert store.vector_count(ns) == 0
    assert store.similar(ns, query, 5, ids) == []
    assert store.pending_vectors(ns, 5) == []
