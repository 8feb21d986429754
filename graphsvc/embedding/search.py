"""Exact nearest neighbours without reading every vector: a :class:`Sketch` of a namespace's codes
bounds each row's cosine from a few principal directions, so a search computes exactly only the
rows whose bound can reach the ``k`` best (:func:`nearest_rows`); the answer is the full scan's,
bit for bit (cosines from :mod:`graphsvc.embedding.codes`). A :class:`SearchPool` splits a large
search between threads.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from graphsvc.embedding.codes import CODE_MAX, Codes, cosines

T = TypeVar("T")
R = TypeVar("R")


#: Directions a :class:`Sketch` keeps as float32 coordinates of every row (the first stage, read
#: for all rows): for MiniLM codes of LoCoMo, BEAM and EventStoryLine, 96 principal directions
#: hold 77% of the energy (measured over 14,752 vectors).
SKETCH_DIMENSION = 96
#: The next directions, kept as int8 coordinates with a scale per row (the second stage, read
#: only for the rows the first one leaves): 192 directions in all hold about 90% of the energy,
#: and cut the rows a top-10 search computes exactly about twentyfold against 96 (median 21,400
#: to 1,080 of 100,000 on the bench's vectors), for 104 bytes a row.
SKETCH_FINE_DIMENSION = 96
#: The least share of the vectors' energy a sketch's first stage must hold to be kept: with
#: less, the bounds are too loose to leave rows unread (vectors with no dominant directions), and
#: a full scan is cheaper than bounds plus a scan. Sentence encoders' vectors hold 70 to 80% in 96
#: directions.
SKETCH_MIN_ENERGY = 0.5
#: Rows a sketch fits or projects at a time (bounds the float64 temporaries: 50 MB at 384).
BLOCK_ROWS = 16_384
#: Rows of best first-stage bounds a sketched search computes first, for a floor.
FIRST_PROBE = 256
#: First-stage bounds sampled, evenly spaced, to choose the first probe (:func:`probe_rows`).
PROBE_SAMPLE = 4_096
#: Rows from which a :class:`SearchPool` splits a search between its threads: at 100,000 rows
#: two threads cut a sketched search from about 7.4 to 5.3 ms in one process (two cores), and
#: held it steady across processes where one thread was not (README, Benchmarks).
SPLIT_FROM = 32_768
#: Cosine units added to every bound: far above float32 rounding in the projected products
#: (about 1e-5 for codes) and the 6-place rounding of cosines (5e-7).
SKETCH_MARGIN = 1e-4


class Projected(NamedTuple):
    """What a :class:`Sketch` keeps of each row (one entry per row in every array)."""

    #: Coordinates on the sketch's first directions (float32).
    coords: NDArray[np.float32]
    #: Length of the row's part outside the first directions.
    rest: NDArray[np.float32]
    #: ``1 / |row|`` (0 for a row of zeros, whose cosine is 0).
    inverse: NDArray[np.float32]
    #: Coordinates on the next directions, as int8 codes: ``scale * fine`` is within
    #: ``scale / 2`` of each coordinate.
    fine: NDArray[np.int8]
    #: The fine codes' scale (0 for a row with no part on those directions).
    scale: NDArray[np.float32]
    #: Length of the row's part outside both sets of directions.
    fine_rest: NDArray[np.float32]

    def take(self, rows: NDArray[np.intp] | slice) -> Projected:
        """The same arrays restricted to ``rows``."""
        return Projected._make(array[rows] for array in self.arrays())

    def arrays(self) -> tuple[NDArray[Any], ...]:
        """The arrays, in field order."""
        return tuple(self)


@dataclass(frozen=True)
class _QueryParts:
    coarse: NDArray[np.float32]  # the query on the first directions, over |q|
    outside: np.float32  # |part outside them| / |q|
    fine: NDArray[np.float32]  # the query on the next directions, over |q|
    fine_slack: np.float32  # half the L1 norm of ``fine``: the most the codes' rounding adds
    fine_outside: np.float32  # |part outside both| / |q|


class Sketch:
    """Orthonormal directions (columns of ``basis``, then of ``fine``) for upper bounds on
    cosines.

    For any orthonormal ``P``, ``q . x = (qP) . (xP) + q_r . x_r`` where ``q_r``, ``x_r`` are the
    parts outside its span, and ``|q_r . x_r| <= |q_r| |x_r|`` (Cauchy-Schwarz). So
    ``((qP) . (xP) + |q_r| |x_r|) / (|q| |x|)`` bounds the cosine from above whatever ``P`` is:
    the basis decides how tight the bounds are (how many rows a search must still compute
    exactly), never which rows it returns. The second stage adds the ``fine`` directions ``F``
    to ``P``, with each row's ``xF`` kept as int8 codes ``k`` and a scale ``s`` such that
    ``|xF - s k| <= s / 2`` per coordinate: then ``(qF) . (xF) <= s (qF) . k + s |qF|_1 / 2``.
    :meth:`fit` takes the leading eigenvectors of the rows' second moments, where sentence
    vectors put most of their energy.
    """

    def __init__(
        self,
        basis: NDArray[np.float64],
        energy: float = 1.0,
        fine: NDArray[np.float64] | None = None,
    ) -> None:
        self.basis = np.ascontiguousarray(basis, dtype=np.float64)
        dimension = self.basis.shape[0]
        self.fine = np.ascontiguousarray(
            np.zeros((dimension, 0)) if fine is None else fine, dtype=np.float64
        )
        #: The share of the fitted rows' energy (sum of squares) inside the first directions.
        self.energy = energy

    @classmethod
    def fit(
        cls,
        codes: NDArray[Any],
        size: int = SKETCH_DIMENSION,
        fine: int = SKETCH_FINE_DIMENSION,
    ) -> Sketch:
        """The ``size`` leading principal directions (uncentred) of the rows of ``codes``, and
        the ``fine`` next ones."""
        dimension = codes.shape[1]
        size = min(size, dimension)
        fine = min(fine, dimension - size)
        moments = np.zeros((dimension, dimension), dtype=np.float64)
        for start in range(0, codes.shape[0], BLOCK_ROWS):  # float64 copies of a block at a time
            block = np.asarray(codes[start : start + BLOCK_ROWS], dtype=np.float64)
            moments += block.T @ block
        values, vectors = np.linalg.eigh(moments)  # ascending eigenvalues
        values, vectors = values[::-1], vectors[:, ::-1]
        total = float(values.sum())
        energy = float(values[:size].sum()) / total if total > 0 else 1.0
        return cls(vectors[:, :size], energy, vectors[:, size : size + fine])

    @property
    def size(self) -> int:
        return int(self.basis.shape[1])

    @property
    def fine_size(self) -> int:
        return int(self.fine.shape[1])

    def project(self, codes: NDArray[Any], norms: NDArray[np.float64]) -> Projected:
        """What the sketch keeps of each row, from the exact squared ``norms``
        (:func:`squared_norms`): lengths are computed in float64, so that no cancellation makes
        them short."""
        rows = np.asarray(codes, dtype=np.float64)
        coords = rows @ self.basis
        inside = np.einsum("ij,ij->i", coords, coords)
        rest = np.sqrt(np.maximum(norms - inside, 0.0))
        fine = rows @ self.fine
        peak = np.max(np.abs(fine), axis=1) if fine.shape[1] else np.zeros(rows.shape[0])
        # The scale as stored (float32), so that the codes are rounded against it.
        scale = (peak / CODE_MAX).astype(np.float32)
        wide_scale = scale.astype(np.float64)[:, None]
        levels = np.divide(fine, wide_scale, out=np.zeros_like(fine), where=wide_scale > 0.0)
        fine_codes = np.clip(np.rint(levels), -CODE_MAX, CODE_MAX).astype(np.int8)
        fine_rest = np.sqrt(np.maximum(norms - inside - np.einsum("ij,ij->i", fine, fine), 0.0))
        lengths = np.sqrt(norms)
        inverse = np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0.0)
        return Projected(
            coords.astype(np.float32),
            rest.astype(np.float32),
            inverse.astype(np.float32),
            fine_codes,
            scale,
            fine_rest.astype(np.float32),
        )

    def _parts(self, query: Codes) -> _QueryParts | None:
        q = query.astype(np.float64)
        squared = float(q @ q)
        if squared == 0.0:
            return None
        length = math.sqrt(squared)
        coarse = q @ self.basis
        fine = q @ self.fine
        inside = float(coarse @ coarse)
        both = inside + float(fine @ fine)
        return _QueryParts(
            (coarse / length).astype(np.float32),
            np.float32(math.sqrt(max(squared - inside, 0.0)) / length),
            (fine / length).astype(np.float32),
            np.float32(float(np.abs(fine).sum()) / length / 2.0),
            np.float32(math.sqrt(max(squared - both, 0.0)) / length),
        )

    def bounds(self, query: Codes, rows: Projected) -> NDArray[np.float32]:
        """Upper bounds on the cosine of ``query`` with each row from its first-stage data
        (:meth:`project`); before the margin."""
        parts = self._parts(query)
        if parts is None:
            return np.zeros(rows.coords.shape[0], dtype=np.float32)
        return _coarse_bounds(parts, rows, rows.coords @ parts.coarse)

    def fine_bounds(self, query: Codes, rows: Projected) -> NDArray[np.float32]:
        """Tighter upper bounds on the cosine of ``query`` with each row, from both stages'
        data (:meth:`project`); before the margin."""
        parts = self._parts(query)
        if parts is None:
            return np.zeros(rows.coords.shape[0], dtype=np.float32)
        return _fine_bounds(parts, rows, rows.coords @ parts.coarse, slice(None))


def _coarse_bounds(
    parts: _QueryParts, rows: Projected, dots: NDArray[np.float32]
) -> NDArray[np.float32]:
    raw = dots + rows.rest * parts.outside
    raw *= rows.inverse
    return raw


def _fine_bounds(
    parts: _QueryParts,
    projected: Projected,
    dots: NDArray[np.float32],
    rows: NDArray[np.intp] | slice,
) -> NDArray[np.float32]:
    """Second-stage bounds of ``projected``'s ``rows``, from their first-stage products
    ``dots`` (``coords @ coarse``, of those rows only)."""
    if isinstance(rows, slice):
        fine, scale = projected.fine[rows], projected.scale[rows]
        fine_rest, inverse = projected.fine_rest[rows], projected.inverse[rows]
    else:  # np.take gathers rows about three times faster than fancy indexing (measured)
        fine, scale = np.take(projected.fine, rows, axis=0), np.take(projected.scale, rows)
        fine_rest, inverse = np.take(projected.fine_rest, rows), np.take(projected.inverse, rows)
    raw = dots + scale * (fine.astype(np.float32) @ parts.fine + parts.fine_slack)
    raw += fine_rest * parts.fine_outside
    raw *= inverse
    return raw


class SearchPool:
    """Threads a sketched search (:func:`nearest_rows`) splits its rows over: the calling thread
    and ``threads - 1`` workers, started on first use. numpy releases the GIL in the products,
    gathers and comparisons, so the parts run at once on as many cores; the answer does not
    depend on how rows are split (every row's cosine is computed alone, from integers). With
    ``threads`` 1 everything runs on the caller's thread. Safe to share between threads."""

    def __init__(self, threads: int, split_from: int = SPLIT_FROM) -> None:
        if threads < 1:
            raise ValueError(f"a search pool needs at least 1 thread, got {threads}")
        self.threads = threads
        self.split_from = split_from
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def map(self, work: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``work(item)`` of each item, in order: the last on the caller's thread, the others on
        the workers."""
        if len(items) <= 1 or self.threads == 1:
            return [work(item) for item in items]
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.threads - 1, thread_name_prefix="graphsvc-vector-search"
                )
            executor = self._executor
        futures = [executor.submit(work, item) for item in items[:-1]]
        last = work(items[-1])
        return [future.result() for future in futures] + [last]

    def spans(self, count: int) -> list[slice]:
        """``0 .. count - 1`` cut into one contiguous span per thread, or one span when
        ``count`` is below ``split_from`` (:data:`SPLIT_FROM`: the handoffs would cost more
        than they save)."""
        parts = self.threads if count >= max(self.split_from, self.threads) else 1
        edges = [count * part // parts for part in range(parts + 1)]
        return [slice(edges[i], edges[i + 1]) for i in range(parts)]

    def close(self) -> None:
        """Stop the workers (a later search starts them again)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


#: One thread: what a search runs on without a pool.
_INLINE = SearchPool(1)


def probe_rows(bounds: NDArray[np.float32], size: int) -> NDArray[np.intp]:
    """About ``size`` (at least ``size // 2``, when there are as many) of the rows with the
    best ``bounds``: those at or above the bound that ``size`` rows of an evenly spaced sample
    of :data:`PROBE_SAMPLE` would reach. A tenth of the time of partitioning every bound at
    100,000 rows (measured); any rows will do for a floor, so the sample decides only how good
    it is. Falls back to the exact partition when the sample's threshold leaves too few."""
    count = bounds.shape[0]
    if size >= count:
        return np.arange(count)
    sample = bounds[:: max(1, count // PROBE_SAMPLE)]
    taken = sample.shape[0]
    want = -(-size * taken // count)
    if want < taken:
        threshold = np.partition(sample, taken - want)[taken - want]
        rows = np.flatnonzero(bounds >= threshold)
        if rows.shape[0] >= size // 2:
            return rows
    return np.argpartition(bounds, count - size)[count - size :]


def _cosines_of_rows(
    query: Codes,
    codes: NDArray[np.int8],
    norms: NDArray[np.float64],
    rows: NDArray[np.intp],
    pool: SearchPool,
) -> NDArray[np.float64]:
    """The exact :func:`cosines` of ``rows``, their parts computed on the pool's threads."""
    parts = pool.spans(rows.shape[0])
    if len(parts) == 1:
        return cosines(query, np.take(codes, rows, axis=0), np.take(norms, rows))
    return np.concatenate(
        pool.map(
            lambda span: cosines(
                query, np.take(codes, rows[span], axis=0), np.take(norms, rows[span])
            ),
            parts,
        )
    )


def _scan(
    query: Codes, codes: NDArray[np.int8], norms: NDArray[np.float64], pool: SearchPool
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Every row and its exact cosine, the rows' spans computed on the pool's threads."""
    parts = pool.spans(codes.shape[0])
    scores = pool.map(lambda span: cosines(query, codes[span], norms[span]), parts)
    return np.arange(codes.shape[0]), np.concatenate(scores)


def nearest_rows(
    query: Codes,
    codes: NDArray[np.int8],
    norms: NDArray[np.float64],
    k: int,
    sketched: tuple[Sketch, Projected] | None = None,
    pool: SearchPool | None = None,
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Rows that hold the exact ``k`` best cosines of ``query`` (every row tied with the
    ``k``-th included) and their exact :func:`cosines`: pass them to :func:`top_k`.

    Without ``sketched`` every row is computed. With it (a :class:`Sketch` and what it keeps of
    every row), about ``4k`` (at least :data:`FIRST_PROBE`) of the rows with the best
    first-stage bounds (:func:`probe_rows`) are computed exactly; their ``k``-th best cosine is a
    floor. Only rows whose first-stage bound reaches the floor (less :data:`SKETCH_MARGIN`) go
    on to the second stage; the ``4k`` of them (at least 64) with the best second-stage bounds
    are computed too, and may raise the floor; only rows whose second-stage bound reaches the
    floor are computed. A row left out has a cosine below the floor, so the answer is the one a
    full scan gives, bit for bit. ``pool`` splits the rows between threads
    (:class:`SearchPool`); the answer is the same.
    """
    pool = _INLINE if pool is None else pool
    count = codes.shape[0]
    if k <= 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64)
    first = max(4 * k, 64)
    if sketched is None or count <= first:
        return _scan(query, codes, norms, pool)
    sketch, projected = sketched
    parts = sketch._parts(query)
    if parts is None:  # a query of zeros: every cosine is 0
        return _scan(query, codes, norms, pool)
    # A wider first probe than the second: the first stage's bounds are looser, and a higher
    # floor leaves fewer rows to the second stage (a quarter fewer at 256 than at 64, measured).
    size = min(max(4 * k, FIRST_PROBE), count)
    spans = pool.spans(count)
    share = -(-size // len(spans))

    def first_stage(
        span: slice,
    ) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.intp]]:
        dots = projected.coords[span] @ parts.coarse
        bounds = _coarse_bounds(parts, projected.take(span), dots)
        return dots, bounds, probe_rows(bounds, share) + span.start

    staged = pool.map(first_stage, spans)
    probe = np.concatenate([found for _, _, found in staged])
    exact = cosines(query, np.take(codes, probe, axis=0), np.take(norms, probe))
    floor = np.partition(exact, probe.shape[0] - k)[probe.shape[0] - k]
    cut = np.float32(floor - SKETCH_MARGIN)
    kept = [np.flatnonzero(bounds >= cut) for _, bounds, _ in staged]
    rows = np.concatenate([left + span.start for left, span in zip(kept, spans, strict=True)])
    if sketch.fine_size and rows.shape[0] > first:

        def second_stage(index: int) -> NDArray[np.float32]:
            left = kept[index]
            dots = np.take(staged[index][0], left)
            return _fine_bounds(parts, projected, dots, left + spans[index].start)

        finer = np.concatenate(pool.map(second_stage, range(len(spans))))
        # The best rows by the tighter bounds are likelier among the k best than the first
        # probe's: their k-th best cosine may raise the floor.
        best = rows[np.argpartition(finer, rows.shape[0] - first)[rows.shape[0] - first :]]
        again = cosines(query, np.take(codes, best, axis=0), np.take(norms, best))
        floor = max(floor, np.partition(again, first - k)[first - k])
        cut = np.float32(floor - SKETCH_MARGIN)
        rows = rows[finer >= cut]
    if 2 * rows.shape[0] > count:  # gathering costs more than scanning past the rest
        return _scan(query, codes, norms, pool)
    return rows, _cosines_of_rows(query, codes, norms, rows, pool)
