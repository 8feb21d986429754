"""Dense recall's arithmetic: stored vector codes, and cosines that are the same bits everywhere.

A memory's vector is stored as int8 *codes*: the embedder's unit vector scaled so that its largest
component is :data:`CODE_MAX`, rounded to integers (``quantize``). That is 1 byte per dimension
(384 B per memory for MiniLM) and, measured on LoCoMo, costs no recall against float32.

The cosine of two code vectors is computed from integers: the dot product and both squared norms
are exact integers, and ``dot / sqrt(|q|^2 * |m|^2)`` is one correctly rounded float64 division
and square root. Any BLAS, summation order or machine gives the same bits, which is what lets the
embedded store (numpy over all of a namespace's codes) and Neo4j (a vector index for candidates,
re-scored here) answer byte-identical bundles. The matrix products run in float32: with
``dimension * CODE_MAX**2 < 2**24`` every partial sum is an integer float32 holds exactly.

The exact search over many rows is :mod:`graphsvc.embedding.search`.

Cosines are rounded to :data:`graphsvc.recall.PLACES` (6) decimals like every other score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.errors import BadInputError

#: The largest code magnitude: codes are int8 in ``[-CODE_MAX, CODE_MAX]``.
CODE_MAX = 127
#: The largest dimension whose integer dot products float32 sums exactly (``d * 127**2 < 2**24``).
MAX_EXACT_DIMENSION = (2**24 - 1) // (CODE_MAX * CODE_MAX)
#: Decimal places of a cosine (as every score: docs/design.md, determinism).
PLACES = 6

Codes = NDArray[np.int8]
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class VectorModel:
    """Which encoder made a store's vectors: every stored vector of a store comes from one model
    (``model_id`` as :attr:`graphsvc.embedding.encoder.Embedder.model_id`) of ``dimension``
    components."""

    model_id: str
    dimension: int


def quantize(vectors: NDArray[np.float32]) -> Codes:
    """The int8 codes of each row: scaled so its largest absolute component is :data:`CODE_MAX`,
    rounded half to even. A zero row stays zero (its cosine with anything is 0)."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"quantize expects a 2-d matrix, got shape {rows.shape}")
    peak = np.max(np.abs(rows), axis=1, keepdims=True)
    scale = np.divide(CODE_MAX, peak, out=np.zeros_like(peak), where=peak > 0.0)
    codes: Codes = np.clip(np.rint(rows * scale), -CODE_MAX, CODE_MAX).astype(np.int8)
    return codes


def to_bytes(codes: Codes) -> bytes:
    """One code vector as the bytes a store keeps."""
    return np.ascontiguousarray(codes, dtype=np.int8).tobytes()


def from_bytes(data: bytes, dimension: int) -> Codes:
    """The code vector stored as ``data``; BadInputError unless it has ``dimension`` codes."""
    if len(data) != dimension:
        raise BadInputError(f"a vector of {len(data)} codes where the model has {dimension}")
    return np.frombuffer(data, dtype=np.int8)


def from_list(values: list[float] | list[int]) -> Codes:
    """Codes from a list of integral numbers (how Neo4j returns a vector property)."""
    array = np.asarray(values, dtype=np.float64)
    codes = np.rint(array)
    if codes.size and (np.any(codes != array) or np.max(np.abs(codes)) > CODE_MAX):
        raise ValueError("a stored vector holds values that are not int8 codes")
    return codes.astype(np.int8)


def squared_norms(codes: NDArray[Any]) -> NDArray[np.float64]:
    """Exact squared L2 norm of each row (or of one vector), as float64 integers."""
    wide = np.asarray(codes, dtype=np.int64)
    return np.asarray(np.einsum("...i,...i->...", wide, wide), dtype=np.float64)


def cosines(
    query: Codes,
    matrix: NDArray[np.float32] | NDArray[np.int8],
    norms: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Exact cosine of ``query`` with each row of ``matrix`` (codes, as int8 or as the float32
    values of codes), rounded to :data:`PLACES`; rows or query of norm 0 give 0.

    ``norms`` are the rows' :func:`squared_norms` when the caller keeps them.
    """
    rows = np.asarray(matrix)
    dimension = query.shape[0]
    if rows.ndim != 2 or rows.shape[1] != dimension:
        raise ValueError(f"cosines: rows of shape {rows.shape} for a query of {dimension}")
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    dots = _dots(query, rows)
    row_norms = squared_norms(rows) if norms is None else norms
    denominator = np.sqrt(row_norms * float(squared_norms(query)))
    raw = np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0.0)
    rounded: NDArray[np.float64] = np.round(raw, PLACES).astype(np.float64)
    return rounded


#: Rows of int8 codes widened at a time for a product: small enough to stay in cache, so a scan
#: of codes costs what one of float32 values does (measured) with a quarter of the memory.
WIDEN_ROWS = 512


def _dots(query: Codes, rows: NDArray[Any]) -> NDArray[np.float64]:
    """Exact integer dot products of ``query`` with each row, as float64."""
    wide: type[np.floating[Any]] = (
        np.float32 if query.shape[0] <= MAX_EXACT_DIMENSION else np.float64
    )
    vector: NDArray[np.floating[Any]] = query.astype(wide)
    if rows.dtype != np.int8 or rows.shape[0] <= WIDEN_ROWS:
        return np.asarray(rows.astype(wide, copy=False) @ vector, dtype=np.float64)
    out = np.empty(rows.shape[0], dtype=np.float64)
    buffer: NDArray[np.floating[Any]] = np.empty((WIDEN_ROWS, rows.shape[1]), dtype=wide)
    for start in range(0, rows.shape[0], WIDEN_ROWS):
        stop = min(start + WIDEN_ROWS, rows.shape[0])
        block = buffer[: stop - start]
        np.copyto(block, rows[start:stop], casting="unsafe")
        out[start:stop] = block @ vector
    return out


def top_k(ids: Sequence[UUID], scores: NDArray[np.float64], k: int) -> list[tuple[UUID, float]]:
    """The ``k`` best ``(id, score)`` pairs: score descending, then id ascending (UUIDs order
    as their strings do; the tie order every store uses)."""
    if k <= 0 or not ids:
        return []
    if k < len(ids):
        # Every row tied with the k-th best stays in, so the id tie-break sees all of them.
        kth = np.partition(scores, len(ids) - k)[len(ids) - k]
        chosen = np.flatnonzero(scores >= kth).tolist()
    else:
        chosen = list(range(len(ids)))
    ranked = sorted(((ids[i], float(scores[i])) for i in chosen), key=lambda p: (-p[1], p[0]))
    return ranked[:k]


def with_given(
    nearest: Sequence[tuple[UUID, float]], given: Sequence[tuple[UUID, float]], k: int
) -> list[tuple[UUID, float]]:
    """What one :meth:`Store.similar` call answers, from two: the ``k`` best of ``nearest``
    (the ``k`` nearest that a search without ids found) and ``given`` (the exact cosines of
    the ids asked) together, and every pair of ``given``; each memory once, score descending
    then id. The ``k`` best of a set are among the ``k`` best of any part of it and the rest,
    so these are the ``k`` best of everything the search and ``given`` saw."""
    scores = dict(nearest) | dict(given)
    best = sorted(scores.items(), key=lambda p: (-p[1], p[0]))[: max(k, 0)]
    chosen = dict(best) | dict(given)
    return sorted(chosen.items(), key=lambda p: (-p[1], p[0]))


def stored_codes(vectors: NDArray[np.float32]) -> list[bytes]:
    """The stored codes of each row of an encoder's float32 matrix (:func:`quantize`, then
    :func:`to_bytes`)."""
    return [to_bytes(row) for row in quantize(vectors)]
