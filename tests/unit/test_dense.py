"""Properties of dense recall's arithmetic (graphsvc/embedding/codes.py): codes stay in bounds,
cosines are symmetric, bounded, independent of the batch they are computed in, and the very bits
an exact integer computation gives, whatever the dtype of the matrix; top_k is the head of one
total order."""

from __future__ import annotations

import math
from uuid import UUID

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from graphsvc.embedding.codes import (
    CODE_MAX,
    MAX_EXACT_DIMENSION,
    PLACES,
    Codes,
    cosines,
    from_bytes,
    from_list,
    quantize,
    squared_norms,
    to_bytes,
    top_k,
    with_given,
)
from graphsvc.errors import BadInputError

FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32)


@st.composite
def code_matrices(draw: st.DrawFn, rows: int | None = None) -> Codes:
    """An int8 code matrix (1..12 rows unless ``rows``, dimension 1..64)."""
    count = draw(st.integers(1, 12)) if rows is None else rows
    dimension = draw(st.integers(1, 64))
    return draw(hnp.arrays(np.int8, (count, dimension), elements=st.integers(-CODE_MAX, 127)))


def exact_cosine(a: Codes, b: Codes) -> float:
    """The cosine from Python integers: one correctly rounded square root and division."""
    dot = sum(int(x) * int(y) for x, y in zip(a, b, strict=True))
    norms = sum(int(x) ** 2 for x in a) * sum(int(y) ** 2 for y in b)
    return dot / math.sqrt(norms) if norms else 0.0


# -- quantize --------------------------------------------------------------------------------------


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2), elements=FINITE))
def test_quantize_keeps_codes_in_bounds_signs_and_the_peak(rows: np.ndarray) -> None:
    codes = quantize(rows)
    assert codes.dtype == np.int8 and codes.shape == rows.shape
    assert int(np.max(np.abs(codes.astype(np.int16)), initial=0)) <= CODE_MAX
    assert np.all((codes == 0) | (np.sign(codes) == np.sign(rows)))
    for row, coded in zip(rows, codes, strict=True):
        peak = float(np.max(np.abs(row))) if row.size else 0.0
        if peak > 0.0:
            assert int(np.max(np.abs(coded.astype(np.int16)))) == CODE_MAX
        else:
            assert not np.any(coded)


NORMAL = st.one_of(
    st.just(0.0),
    st.floats(0.0009765625, 1e6, width=32, allow_subnormal=False),
    st.floats(-1e6, -0.0009765625, width=32, allow_subnormal=False),
)


@given(
    hnp.arrays(np.float32, (3, 16), elements=NORMAL),
    st.sampled_from([0.125, 0.5, 2.0, 1024.0]),
)
def test_quantize_ignores_the_scale_of_a_row(rows: np.ndarray, factor: float) -> None:
    """A unit vector or any multiple of it has the same codes (exactly, for a power of two)."""
    assert np.array_equal(quantize(rows * np.float32(factor)), quantize(rows))


def test_quantize_refuses_a_vector_that_is_not_a_matrix() -> None:
    with pytest.raises(ValueError, match="2-d"):
        quantize(np.ones(4, dtype=np.float32))


# -- cosines ---------------------------------------------------------------------------------------


@given(code_matrices(rows=2))
def test_cosines_are_symmetric_and_bounded(pair: Codes) -> None:
    a, b = pair[0], pair[1]
    ab = cosines(a, pair[1:])[0]
    ba = cosines(b, pair[:1])[0]
    assert ab == ba
    assert -1.0 <= ab <= 1.0
    if np.any(a):
        assert cosines(a, pair[:1])[0] == 1.0
        assert cosines(a, -pair[:1].astype(np.int16).astype(np.int8))[0] == -1.0
    else:
        assert ab == 0.0


@given(code_matrices(), st.data())
def test_cosines_are_the_exact_integer_cosine_for_int8_and_float32_matrices(
    matrix: Codes, data: st.DataObject
) -> None:
    query = data.draw(hnp.arrays(np.int8, matrix.shape[1], elements=st.integers(-127, 127)))
    from_int8 = cosines(query, matrix)
    from_float32 = cosines(query, matrix.astype(np.float32))
    with_norms = cosines(query, matrix.astype(np.float32), squared_norms(matrix))
    assert from_int8.tobytes() == from_float32.tobytes() == with_norms.tobytes()
    exact = np.round(np.array([exact_cosine(query, row) for row in matrix]), PLACES)
    assert from_int8.tobytes() == exact.tobytes()


@given(code_matrices(), st.data())
def test_a_cosine_does_not_depend_on_the_batch(matrix: Codes, data: st.DataObject) -> None:
    query = data.draw(hnp.arrays(np.int8, matrix.shape[1], elements=st.integers(-127, 127)))
    whole = cosines(query, matrix)
    alone = np.concatenate([cosines(query, matrix[i : i + 1]) for i in range(len(matrix))])
    assert whole.tobytes() == alone.tobytes()
    order = data.draw(st.permutations(range(len(matrix))))
    shuffled = cosines(query, matrix[list(order)])
    assert shuffled.tobytes() == whole[list(order)].tobytes()


@settings(max_examples=20)
@given(st.sampled_from([384, MAX_EXACT_DIMENSION, MAX_EXACT_DIMENSION + 1, 1536]))
def test_cosines_are_exact_at_real_dimensions(dimension: int) -> None:
    """384 (MiniLM) and past the float32 limit (the float64 path): extreme codes, exact."""
    rng = np.random.default_rng(dimension)
    matrix = rng.choice(np.array([-127, 127], dtype=np.int8), size=(6, dimension))
    matrix[1] = 127
    query = np.full(dimension, 127, dtype=np.int8)
    got = cosines(query, matrix.astype(np.float32))
    exact = np.round(np.array([exact_cosine(query, row) for row in matrix]), PLACES)
    assert got.tobytes() == exact.tobytes()
    assert got[1] == 1.0


def test_zero_vectors_have_cosine_zero_and_shapes_are_checked() -> None:
    zero = np.zeros(4, dtype=np.int8)
    rows = np.array([[1, 2, 3, 4], [0, 0, 0, 0]], dtype=np.int8)
    assert cosines(zero, rows).tolist() == [0.0, 0.0]
    assert cosines(rows[0], rows).tolist() == [1.0, 0.0]
    assert cosines(zero, np.zeros((0, 4), dtype=np.int8)).shape == (0,)
    with pytest.raises(ValueError, match="shape"):
        cosines(np.zeros(3, dtype=np.int8), rows)


# -- bytes -----------------------------------------------------------------------------------------


@given(hnp.arrays(np.int8, st.integers(1, 64), elements=st.integers(-127, 127)))
def test_codes_round_trip_through_bytes_and_lists(codes: Codes) -> None:
    data = to_bytes(codes)
    assert len(data) == len(codes)
    assert np.array_equal(from_bytes(data, len(codes)), codes)
    assert np.array_equal(from_list([float(c) for c in codes]), codes)
    with pytest.raises(BadInputError, match=f"{len(codes) + 1} codes where the model has"):
        from_bytes(data + b"\x00", len(codes))


def test_from_list_refuses_values_that_are_not_codes() -> None:
    with pytest.raises(ValueError, match="not int8 codes"):
        from_list([1.0, 0.5])
    with pytest.raises(ValueError, match="not int8 codes"):
        from_list([128])


# -- top_k -----------------------------------------------------------------------------------------

SCORES = st.sampled_from([-1.0, -0.25, 0.0, 0.3, 0.5, 0.707107, 1.0])


@given(
    st.lists(st.tuples(st.integers(0, 2**128 - 1), SCORES), max_size=40, unique_by=lambda p: p[0]),
    st.integers(-1, 45),
)
def test_top_k_is_the_head_of_score_descending_then_id(
    pairs: list[tuple[int, float]], k: int
) -> None:
    ids = [UUID(int=i) for i, _ in pairs]
    scores = np.array([s for _, s in pairs], dtype=np.float64)
    best = top_k(ids, scores, k)
    ranked = sorted(zip(ids, scores.tolist(), strict=True), key=lambda p: (-p[1], str(p[0])))
    assert best == ranked[: max(k, 0)]
    assert all(type(score) is float for _, score in best)


# -- the k nearest and the given ids, from two answers ---------------------------------------------

COSINES_BY_ID = st.dictionaries(
    st.integers(0, 40).map(lambda n: UUID(int=n)),
    st.integers(-4, 4).map(lambda n: n / 4),  # few values: ties are common
    max_size=30,
)


@given(COSINES_BY_ID, st.data(), st.integers(0, 12))
def test_with_given_is_what_one_call_answers(
    scores: dict[UUID, float], data: st.DataObject, k: int
) -> None:
    """A search that also saw the given ids takes its k best from both; two calls (the k best
    of the search alone, and the given ids' cosines) merged by with_given say the same."""
    ids = sorted(scores)
    searched = data.draw(st.lists(st.sampled_from(ids), unique=True) if ids else st.just([]))
    asked = data.draw(st.lists(st.sampled_from(ids), unique=True) if ids else st.just([]))

    def best(pool: list[UUID], n: int) -> list[tuple[UUID, float]]:
        return sorted(((i, scores[i]) for i in pool), key=lambda p: (-p[1], p[0]))[:n]

    pool = list(dict.fromkeys([*searched, *asked]))
    one_call = sorted(
        (dict(best(pool, k)) | {i: scores[i] for i in asked}).items(),
        key=lambda p: (-p[1], p[0]),
    )
    given_pairs = [(i, scores[i]) for i in asked]
    assert with_given(best(searched, k), given_pairs, k) == one_call
