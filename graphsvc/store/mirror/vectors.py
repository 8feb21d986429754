"""A namespace's vectors as the embedded store searches them: one int8 matrix of codes, and a
sketch.

Row ``r`` of :attr:`VectorTable.matrix` holds the codes (:mod:`graphsvc.embedding.codes`) of memory
``ids[r]``, and ``norms[r]`` their exact squared norm. Rows ``0 .. count - 1`` are live, with no
hole: a deleted row takes the last row's place. The arrays grow by doubling and shrink by half
when a quarter is used.

A search (:meth:`VectorTable.nearest`) of a small table computes every cosine. Once the table has
:data:`SKETCH_FROM` rows it fits a :class:`~graphsvc.embedding.search.Sketch` on them and keeps what
the sketch needs of every row (:class:`~graphsvc.embedding.search.Projected`: 96 float32
coordinates, 96 int8 ones and four float32 lengths and scales, 496 bytes a row beside the 384 of the
codes): a search then reads the coordinates, bounds every cosine from above, tightens the bounds of
the rows that may still count with the int8 coordinates, and computes exactly only the rows that can
reach the ``k`` best (:func:`graphsvc.embedding.search.nearest_rows`). The answer is the full
scan's, bit for bit; the sketch only decides how much is read.

A compaction writes the snapshot from a capture taken under the store's lock while writes go on
(:mod:`graphsvc.store.mirror.writer`): :meth:`VectorTable.share` hands it the live rows by
reference, and the table copies its matrix before it next changes one of those rows in place
(copy on write), until :meth:`VectorTable.release` says the snapshot is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.embedding.codes import Codes, cosines, squared_norms, top_k
from graphsvc.embedding.search import (
    BLOCK_ROWS,
    SKETCH_MIN_ENERGY,
    Projected,
    SearchPool,
    Sketch,
    nearest_rows,
)

T = TypeVar("T", bound=np.generic)

#: Rows of a new table's arrays.
MIN_CAPACITY = 16
#: Rows from which a table keeps a sketch: below, a full scan is about as fast.
SKETCH_FROM = 4_096


@dataclass(frozen=True)
class VectorShare:
    """A table's live rows at one moment, by reference: what a snapshot writes."""

    table: VectorTable
    ids: list[UUID]
    matrix: NDArray[np.int8]

    def codes(self, start: int, stop: int) -> bytes:
        """The int8 codes of rows ``start .. stop - 1``, concatenated."""
        return self.matrix[start:stop].tobytes()


class VectorTable:
    """The vectors of one namespace, all of one ``dimension`` (see the module docstring)."""

    def __init__(self, dimension: int, sketch_from: int = SKETCH_FROM) -> None:
        self.dimension = dimension
        self.ids: list[UUID] = []  # row -> memory id
        self.rows: dict[int, int] = {}  # id.int -> row
        self._matrix: NDArray[np.int8] = np.zeros((0, dimension), dtype=np.int8)
        self._norms: NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._sketch_from = sketch_from
        self._sketch: Sketch | None = None
        # With a sketch: what it keeps of every row (arrays of the matrix's capacity).
        self._projected: Projected | None = None
        self._shared = 0  # rows a snapshot capture still reads in self._matrix
        self._share: VectorShare | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, key: int) -> bool:
        return key in self.rows

    @property
    def matrix(self) -> NDArray[np.int8]:
        """The live rows (a view: valid until the next change)."""
        return self._matrix[: len(self.ids)]

    @property
    def norms(self) -> NDArray[np.float64]:
        """The live rows' exact squared norms (a view: valid until the next change)."""
        return self._norms[: len(self.ids)]

    def row_of(self, key: int) -> int | None:
        """The row of memory ``UUID(int=key)``, or None when it has no vector."""
        return self.rows.get(key)

    @property
    def sketched(self) -> bool:
        """Whether searches bound cosines with a sketch (the table has reached its size)."""
        return self._sketch is not None

    def nearest(
        self, query: Codes, k: int, pool: SearchPool | None = None
    ) -> list[tuple[UUID, float]]:
        """The ``k`` best ``(id, cosine)`` of ``query``, as :func:`graphsvc.embedding.codes.top_k`
        orders them: exactly what a full scan gives, whatever ``pool`` splits the rows over."""
        if k <= 0:
            return []
        live = len(self.ids)
        sketched = None
        if self._sketch is not None and self._projected is not None:
            sketched = (self._sketch, self._projected.take(slice(0, live)))
        rows, scores = nearest_rows(query, self.matrix, self.norms, k, sketched, pool)
        ids = self.ids
        return top_k([ids[row] for row in rows.tolist()], scores, k)

    def cosines_of(self, query: Codes, keys: Sequence[int]) -> dict[int, float]:
        """The exact cosine of ``query`` with each memory ``UUID(int=key)`` that has a vector."""
        found = [(key, row) for key in keys if (row := self.rows.get(key)) is not None]
        if not found:
            return {}
        rows = [row for _, row in found]
        scores = cosines(query, self._matrix[rows], self._norms[rows]).tolist()
        return {key: score for (key, _), score in zip(found, scores, strict=True)}

    # -- changes ---------------------------------------------------------------------------------

    def put(self, ids: Sequence[UUID], codes: Codes) -> None:
        """Store the vectors ``codes[i]`` (a ``len(ids) x dimension`` int8 matrix) of memories
        ``ids`` (distinct), replacing the ones they have."""
        if len(ids) != len(codes) or (len(ids) and codes.shape[1] != self.dimension):
            raise ValueError(
                f"{len(ids)} ids for codes of shape {codes.shape} (dimension {self.dimension})"
            )
        rows = self.rows
        replaced = [index for index, mid in enumerate(ids) if mid.int in rows]
        if replaced:
            for index in replaced:
                self._write_row(rows[ids[index].int], codes[index])
            taken = set(replaced)
            fresh = [index for index in range(len(ids)) if index not in taken]
            ids, codes = [ids[index] for index in fresh], codes[fresh]
        if not ids:
            return
        start = len(self.ids)
        stop = start + len(ids)
        self.reserve(stop)
        if start < self._shared:
            self._own()
        self._matrix[start:stop] = codes
        self._norms[start:stop] = squared_norms(codes)
        self.ids.extend(ids)
        rows.update(zip([mid.int for mid in ids], range(start, stop), strict=True))
        if self._sketch is not None:
            self._project(start, stop)
        elif stop >= self._sketch_from:
            self._start_sketch()

    def _start_sketch(self) -> None:
        """Fit the sketch on the live rows and project them all; or, when the vectors have no
        dominant directions (:data:`~graphsvc.embedding.search.SKETCH_MIN_ENERGY`), keep
        scanning."""
        live = len(self.ids)
        self._sketch_from = 2**62  # fitted once per table (a restart fits again)
        sketch = Sketch.fit(self._matrix[:live])
        if sketch.energy < SKETCH_MIN_ENERGY:
            return
        self._sketch = sketch
        capacity = self._matrix.shape[0]
        shape = sketch.project(self._matrix[:0], self._norms[:0])
        self._projected = Projected._make(
            np.empty((capacity, *array.shape[1:]), dtype=array.dtype) for array in shape.arrays()
        )
        self._project(0, live)

    def _project(self, start: int, stop: int) -> None:
        sketch, projected = self._sketch, self._projected
        if sketch is None or projected is None or start >= stop:
            return
        for first in range(start, stop, BLOCK_ROWS):
            last = min(first + BLOCK_ROWS, stop)
            fresh = sketch.project(self._matrix[first:last], self._norms[first:last])
            for kept, values in zip(projected.arrays(), fresh.arrays(), strict=True):
                kept[first:last] = values

    def remove(self, key: int) -> bool:
        """Drop the vector of memory ``UUID(int=key)``; whether it had one."""
        row = self.rows.pop(key, None)
        if row is None:
            return False
        last = len(self.ids) - 1
        moved = self.ids.pop()
        if row != last:
            if row < self._shared:
                self._own()
            self._matrix[row] = self._matrix[last]
            self._norms[row] = self._norms[last]
            if self._projected is not None:
                for array in self._projected.arrays():
                    array[row] = array[last]
            self.ids[row] = moved
            self.rows[moved.int] = row
        capacity = self._matrix.shape[0]
        if capacity > MIN_CAPACITY and last <= capacity // 4:
            self._resize(max(MIN_CAPACITY, capacity // 2))
        return True

    def _write_row(self, row: int, codes: Codes) -> None:
        if row < self._shared:
            self._own()
        self._matrix[row] = codes
        self._norms[row] = squared_norms(codes)
        self._project(row, row + 1)

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` vectors in all (a load that knows how many are coming)."""
        capacity = self._matrix.shape[0]
        if rows > capacity:
            self._resize(max(MIN_CAPACITY, 2 * capacity, rows))

    def _resize(self, capacity: int) -> None:
        live = len(self.ids)
        # Rows past the live ones are never read: no need to zero them.
        self._matrix = _resized(self._matrix, capacity, live)
        self._norms = _resized(self._norms, capacity, live)
        if self._projected is not None:
            self._projected = Projected._make(
                _resized(array, capacity, live) for array in self._projected.arrays()
            )
        self._shared = 0  # a capture keeps the old array to itself

    def _own(self) -> None:
        """Copy the matrix a capture shares before a row of it changes."""
        self._matrix = self._matrix.copy()
        self._shared = 0

    # -- snapshots -------------------------------------------------------------------------------

    def share(self) -> VectorShare:
        """The live rows for a snapshot, by reference (call under the store's lock); the table
        copies them before it changes one in place, until :meth:`release`."""
        live = len(self.ids)
        share = VectorShare(self, list(self.ids), self._matrix[:live])
        self._shared = live
        self._share = share
        return share

    def release(self, share: VectorShare) -> None:
        """The snapshot that took ``share`` has read it: rows may change in place again. (Runs
        without the store's lock: a write that still sees the old mark merely copies.)"""
        if self._share is share:
            self._share = None
            self._shared = 0


def _resized(array: NDArray[T], capacity: int, live: int) -> NDArray[T]:
    """``array`` with ``capacity`` rows, its first ``live`` ones kept (the rest never read)."""
    grown = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[:live] = array[:live]
    return grown


__all__ = [
    "MIN_CAPACITY",
    "SKETCH_FROM",
    "VectorShare",
    "VectorTable",
]
