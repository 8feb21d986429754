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

Cosines are rounded to :data:`graphsvc.recall.PLACES` (6) decimals like every other score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
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


@dataclass(frozen=True)
class VectorModel:
    """Which encoder made a store's vectors: every stored vector of a store comes from one model
    (``model_id`` as :attr:`graphsvc.embed.Embedder.model_id`) of ``dimension`` components."""

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


# -- exact nearest neighbours without reading every vector ---------------------------------------

#: Directions a :class:`Sketch` keeps: for MiniLM codes of LoCoMo, BEAM and EventStoryLine, 96
#: principal directions hold 77% of the energy and leave about 3% of the rows (median 1%) for the
#: exact product of a top-10 search (measured over 14,752 vectors).
SKETCH_DIMENSION = 96
#: The least share of the vectors' energy a sketch must hold to be kept: with less, the bounds
#: are too loose to leave rows unread (vectors with no dominant directions), and a full scan is
#: cheaper than bounds plus a scan. Sentence encoders' vectors hold 70 to 80% in 96 directions.
SKETCH_MIN_ENERGY = 0.5
#: Cosine units added to every bound: far above float32 rounding in the projected products
#: (about 1e-5 for codes) and the 6-place rounding of cosines (5e-7).
SKETCH_MARGIN = 1e-4


class Sketch:
    """An orthonormal basis ``P`` of a few directions (columns), for upper bounds on cosines.

    For any orthonormal ``P``, ``q . x = (qP) . (xP) + q_r . x_r`` where ``q_r``, ``x_r`` are the
    parts outside its span, and ``|q_r . x_r| <= |q_r| |x_r|`` (Cauchy-Schwarz). So
    ``((qP) . (xP) + |q_r| |x_r|) / (|q| |x|)`` bounds the cosine from above whatever ``P`` is:
    the basis decides how tight the bounds are (how many rows a search must still compute
    exactly), never which rows it returns. :meth:`fit` takes the leading eigenvectors of the
    rows' second moments, where sentence vectors put most of their energy.
    """

    def __init__(self, basis: NDArray[np.float64], energy: float = 1.0) -> None:
        self.basis = np.ascontiguousarray(basis, dtype=np.float64)
        #: The share of the fitted rows' energy (sum of squares) inside the span.
        self.energy = energy

    @classmethod
    def fit(cls, codes: NDArray[Any], size: int = SKETCH_DIMENSION) -> Sketch:
        """The ``size`` leading principal directions (uncentred) of the rows of ``codes``."""
        rows = np.asarray(codes, dtype=np.float64)
        size = min(size, rows.shape[1])
        values, vectors = np.linalg.eigh(rows.T @ rows)  # ascending eigenvalues
        total = float(values.sum())
        energy = float(values[::-1][:size].sum()) / total if total > 0 else 1.0
        return cls(vectors[:, ::-1][:, :size], energy)

    @property
    def size(self) -> int:
        return int(self.basis.shape[1])

    def project(
        self, codes: NDArray[Any], norms: NDArray[np.float64]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Each row's coordinates in the basis (float32, for the scan) and the length of its part
        outside the span, from the exact squared ``norms`` (:func:`squared_norms`): computed in
        float64, so that no cancellation makes it short."""
        coords = np.asarray(codes, dtype=np.float64) @ self.basis
        rest = np.sqrt(np.maximum(norms - np.einsum("ij,ij->i", coords, coords), 0.0))
        return coords.astype(np.float32), rest.astype(np.float32)

    def bounds(
        self,
        query: Codes,
        coords: NDArray[np.float32],
        rest: NDArray[np.float32],
        inverse_lengths: NDArray[np.float32],
    ) -> NDArray[np.float32]:
        """Upper bounds on the cosine of ``query`` with each row, from the rows' :meth:`project`
        output and ``1 / |row|`` (0 for a row of zeros, whose cosine is 0); before the margin."""
        q = query.astype(np.float64)
        length = math.sqrt(float(q @ q))
        if length == 0.0:
            return np.zeros(coords.shape[0], dtype=np.float32)
        projected = q @ self.basis
        outside = math.sqrt(max(float(q @ q) - float(projected @ projected), 0.0))
        raw = coords @ (projected / length).astype(np.float32)
        raw += rest * np.float32(outside / length)
        raw *= inverse_lengths
        return raw


def nearest_rows(
    query: Codes,
    codes: NDArray[np.int8],
    norms: NDArray[np.float64],
    k: int,
    sketched: tuple[Sketch, NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]
    | None = None,
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Rows that hold the exact ``k`` best cosines of ``query`` (every row tied with the
    ``k``-th included) and their exact :func:`cosines`: pass them to :func:`top_k`.

    Without ``sketched`` every row is computed. With it (a :class:`Sketch` and, for every row,
    its coordinates, outside length and inverse length), the rows' bounds pick ``4k`` (at least
    64) rows to compute exactly; their ``k``-th best cosine is a floor, and only rows whose bound
    reaches it (less :data:`SKETCH_MARGIN`) are computed too. A row left out has a cosine below
    the floor, so the answer is the one a full scan gives, bit for bit.
    """
    count = codes.shape[0]
    if sketched is None or count <= max(4 * k, 64):
        return np.arange(count), cosines(query, codes, norms)
    sketch, coords, rest, inverse = sketched
    bounds = sketch.bounds(query, coords, rest, inverse)
    first = max(4 * k, 64)
    probe = np.argpartition(bounds, count - first)[count - first :]
    exact = cosines(query, codes[probe], norms[probe])
    floor = np.partition(exact, exact.shape[0] - k)[exact.shape[0] - k] if k > 0 else 1.0
    rows = np.flatnonzero(bounds >= np.float32(floor - SKETCH_MARGIN))
    if 2 * rows.shape[0] > count:  # gathering costs more than scanning past the rest
        return np.arange(count), cosines(query, codes, norms)
    return rows, cosines(query, codes[rows], norms[rows])
