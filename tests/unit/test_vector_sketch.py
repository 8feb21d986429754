"""Exact nearest neighbours through a sketch: the bounds never cut a row a full scan would return
(ties, zero vectors, duplicates, rows replaced and removed), and on vectors with structure they
leave most rows unread."""

from __future__ import annotations

import threading
from uuid import UUID

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from graphsvc.embedding.codes import cosines, quantize, squared_norms, top_k
from graphsvc.embedding.search import SKETCH_MARGIN, SearchPool, Sketch, nearest_rows, probe_rows
from graphsvc.store.mirror.vectors import VectorTable

DIMENSION = 160  # more than a sketch's 96 + 96 directions would take: bounds are bounds


#: The few directions structured vectors mostly live in (one set for every test).
MIXING = np.random.default_rng(0).standard_normal((4, DIMENSION))


def structured_codes(rng: np.random.Generator, count: int, rank: int = 4) -> NDArray[np.int8]:
    """Codes of vectors that mostly live in a few directions, as sentence vectors do."""
    vectors = rng.standard_normal((count, rank)) @ MIXING[:rank]
    vectors += 0.15 * rng.standard_normal((count, DIMENSION))
    return quantize(vectors.astype(np.float32))


def full_scan(
    ids: list[UUID], codes: NDArray[np.int8], query: NDArray[np.int8], k: int
) -> list[tuple[UUID, float]]:
    return top_k(ids, cosines(query, codes, squared_norms(codes)), k)


def ids_for(count: int, offset: int = 0) -> list[UUID]:
    return [UUID(int=offset + i + 1) for i in range(count)]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 400),
    k=st.integers(1, 30),
    duplicates=st.integers(0, 20),
    zeros=st.integers(0, 5),
)
def test_a_sketched_search_returns_the_full_scans_answer(
    seed: int, count: int, k: int, duplicates: int, zeros: int
) -> None:
    rng = np.random.default_rng(seed)
    codes = structured_codes(rng, count)
    # Ties at the boundary: copies of rows; and rows of zeros (cosine 0 with everything).
    codes = np.concatenate(
        [codes, codes[rng.integers(0, count, duplicates)], np.zeros((zeros, DIMENSION), np.int8)]
    )
    ids = ids_for(len(codes))
    table = VectorTable(DIMENSION, sketch_from=16)
    table.put(ids, codes)
    assert table.sketched == (len(codes) >= 16)
    for query in [codes[0], structured_codes(rng, 1)[0], np.zeros(DIMENSION, np.int8)]:
        assert table.nearest(query, k) == full_scan(ids, codes, query, k)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 12))
def test_the_answer_stays_exact_through_replacements_and_removals(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    table = VectorTable(DIMENSION, sketch_from=32)
    truth: dict[UUID, NDArray[np.int8]] = {}
    for step in range(6):
        fresh = ids_for(int(rng.integers(5, 60)), offset=1_000 * step)
        codes = structured_codes(rng, len(fresh))
        table.put(fresh, codes)
        truth.update(zip(fresh, codes, strict=True))
        replaced = [mid for mid in truth if rng.random() < 0.1]
        if replaced:
            new_codes = structured_codes(rng, len(replaced))
            table.put(replaced, new_codes)
            truth.update(zip(replaced, new_codes, strict=True))
        for mid in [mid for mid in truth if rng.random() < 0.2]:
            assert table.remove(mid.int)
            del truth[mid]
        ids = sorted(truth)
        matrix = np.array([truth[mid] for mid in ids], dtype=np.int8).reshape(-1, DIMENSION)
        query = structured_codes(rng, 1)[0]
        assert table.nearest(query, k) == full_scan(ids, matrix, query, k)
        asked = ids[::3]
        exact = dict(zip(ids, cosines(query, matrix, squared_norms(matrix)).tolist(), strict=True))
        assert table.cosines_of(query, [mid.int for mid in asked]) == {
            mid.int: exact[mid] for mid in asked
        }


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 3_000),
    k=st.integers(1, 40),
    threads=st.integers(2, 5),
    duplicates=st.integers(0, 30),
)
def test_a_search_split_over_threads_gives_the_one_threads_answer(
    seed: int, count: int, k: int, threads: int, duplicates: int
) -> None:
    rng = np.random.default_rng(seed)
    codes = structured_codes(rng, count)
    codes = np.concatenate([codes, codes[rng.integers(0, count, duplicates)]])
    ids = ids_for(len(codes))
    table = VectorTable(DIMENSION, sketch_from=16)
    table.put(ids, codes)
    pool = SearchPool(threads, split_from=8)
    try:
        for query in [codes[-1], structured_codes(rng, 1)[0], np.zeros(DIMENSION, np.int8)]:
            expected = full_scan(ids, codes, query, k)
            assert table.nearest(query, k, pool) == expected
            assert table.nearest(query, k) == expected
    finally:
        pool.close()


@settings(max_examples=80, deadline=None)
@given(
    bounds=st.lists(st.floats(-1.0, 1.0, width=32), min_size=1, max_size=9_000),
    size=st.integers(1, 600),
)
def test_a_probe_takes_the_best_bounds_and_enough_of_them(bounds: list[float], size: int) -> None:
    values = np.array(bounds, dtype=np.float32)
    rows = probe_rows(values, size)
    assert len(set(rows.tolist())) == len(rows)
    assert len(rows) >= min(len(values), size // 2)
    left = np.setdiff1d(np.arange(len(values)), rows)
    if len(left) and len(rows):
        assert values[rows].min() >= values[left].max()


def test_a_pool_cuts_rows_into_one_span_per_thread_and_runs_the_last_inline() -> None:
    pool = SearchPool(3, split_from=10)
    try:
        assert pool.spans(9) == [slice(0, 9)]
        spans = pool.spans(100)
        assert spans == [slice(0, 33), slice(33, 66), slice(66, 100)]
        caller = threading.get_ident()
        ran_on = pool.map(lambda span: (span, threading.get_ident()), spans)
        assert [span for span, _ in ran_on] == spans
        assert ran_on[-1][1] == caller
        assert all(ident != caller for _, ident in ran_on[:-1])
        assert SearchPool(1).map(lambda n: threading.get_ident(), [1, 2]) == [caller] * 2
    finally:
        pool.close()
    with pytest.raises(ValueError, match="at least 1 thread"):
        SearchPool(0)


def test_bounds_are_upper_bounds_for_any_orthonormal_basis() -> None:
    rng = np.random.default_rng(3)
    codes = structured_codes(rng, 500)
    codes[:5] = 0  # rows of zeros: cosine 0, bound 0
    norms = squared_norms(codes)
    random_basis, _ = np.linalg.qr(rng.standard_normal((DIMENSION, 30)))
    sketches = [
        Sketch.fit(codes, size=6, fine=10),
        Sketch.fit(codes, size=6, fine=0),
        Sketch(random_basis[:, :6]),
        Sketch(random_basis[:, :6], fine=random_basis[:, 6:30]),
    ]
    queries = [*structured_codes(rng, 20), codes[7], np.zeros(DIMENSION, np.int8)]
    for sketch in sketches:
        projected = sketch.project(codes, norms)
        for query in queries:
            exact = cosines(query, codes, norms)
            coarse = sketch.bounds(query, projected)
            fine = sketch.fine_bounds(query, projected)
            assert np.all(coarse + SKETCH_MARGIN >= exact)
            assert np.all(fine + SKETCH_MARGIN >= exact)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fine=st.integers(0, 60), scale=st.floats(0.01, 3.0))
def test_second_stage_bounds_hold_and_tighten(seed: int, fine: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    codes = quantize((scale * rng.standard_normal((300, DIMENSION))).astype(np.float32))
    codes = np.concatenate([codes, structured_codes(rng, 300)])
    norms = squared_norms(codes)
    sketch = Sketch.fit(codes[::3], size=12, fine=fine)
    assert sketch.fine_size == fine
    projected = sketch.project(codes, norms)
    for query in [codes[0], codes[400], structured_codes(rng, 1)[0]]:
        exact = cosines(query, codes, norms)
        coarse = sketch.bounds(query, projected)
        finer = sketch.fine_bounds(query, projected)
        assert np.all(finer + SKETCH_MARGIN >= exact)
        # The int8 rounding costs at most its slack: never much looser than the first stage.
        assert np.all(finer <= coarse + 0.05)


def test_the_second_stage_leaves_fewer_rows_than_the_first() -> None:
    rng = np.random.default_rng(12)
    codes = structured_codes(rng, 20_000, rank=4)
    norms = squared_norms(codes)
    ids = ids_for(len(codes))
    # Two directions leave half the structure outside; the second stage holds the rest of it.
    coarse_only = Sketch.fit(codes[:4_096], size=2, fine=0)
    both = Sketch.fit(codes[:4_096], size=2, fine=6)
    one_total = two_total = 0
    for query in structured_codes(rng, 5, rank=4):
        one, _ = nearest_rows(
            query, codes, norms, 10, (coarse_only, coarse_only.project(codes, norms))
        )
        two, scores = nearest_rows(query, codes, norms, 10, (both, both.project(codes, norms)))
        one_total += len(one)
        two_total += len(two)
        assert top_k([ids[r] for r in two.tolist()], scores, 10) == full_scan(ids, codes, query, 10)
    assert two_total < one_total / 4


def test_on_structured_vectors_most_rows_are_never_computed() -> None:
    rng = np.random.default_rng(11)
    codes = structured_codes(rng, 20_000, rank=3)
    norms = squared_norms(codes)
    sketch = Sketch.fit(codes[:4_096], size=8)
    projected = sketch.project(codes, norms)
    computed = []
    for query in structured_codes(rng, 10, rank=3):
        rows, _ = nearest_rows(query, codes, norms, 10, (sketch, projected))
        computed.append(len(rows))
    assert np.median(computed) < 0.2 * len(codes)


def test_vectors_without_dominant_directions_are_scanned_and_still_exact() -> None:
    rng = np.random.default_rng(5)
    codes = quantize(rng.standard_normal((3_000, 384)).astype(np.float32))
    ids = ids_for(len(codes))
    table = VectorTable(384, sketch_from=1_000)
    table.put(ids, codes)
    assert not table.sketched  # 96 of 384 directions hold about a quarter of isotropic vectors
    query = quantize(rng.standard_normal((1, 384)).astype(np.float32))[0]
    assert table.nearest(query, 10) == full_scan(ids, codes, query, 10)


def test_a_scan_of_int8_codes_in_blocks_gives_the_bits_of_one_product() -> None:
    rng = np.random.default_rng(8)
    codes = rng.integers(-127, 128, (2_000, 384)).astype(np.int8)
    query = rng.integers(-127, 128, 384).astype(np.int8)
    norms = squared_norms(codes)
    blocked = cosines(query, codes, norms)
    whole = cosines(query, codes.astype(np.float32), norms)
    assert np.array_equal(blocked, whole)
