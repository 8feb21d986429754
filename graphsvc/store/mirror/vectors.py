"""A namespace's vectors as the mirror searches them: one float32 matrix of code values.

Row ``r`` of :attr:`VectorTable.matrix` holds the codes (:mod:`graphsvc.dense`) of memory
``ids[r]`` as float32 (exact: codes are small integers), and ``norms[r]`` their exact squared norm,
so that dense recall over a namespace is one matrix-vector product plus
:func:`graphsvc.dense.cosines`' arithmetic. Rows ``0 .. count - 1`` are live, with no hole: a
deleted row takes the last row's place. The arrays grow by doubling and shrink by half when a
quarter is used.

A compaction writes the snapshot from a capture taken under the store's lock while writes go on
(:mod:`graphsvc.store.mirror.writer`): :meth:`VectorTable.share` hands it the live rows by
reference, and the table copies its matrix before it next changes one of those rows in place
(copy on write), until :meth:`VectorTable.release` says the snapshot is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.dense import Codes, squared_norms

#: Rows of a new table's arrays.
MIN_CAPACITY = 16


@dataclass(frozen=True)
class VectorShare:
    """A table's live rows at one moment, by reference: what a snapshot writes."""

    table: VectorTable
    ids: list[UUID]
    matrix: NDArray[np.float32]

    def codes(self, start: int, stop: int) -> bytes:
        """The int8 codes of rows ``start .. stop - 1``, concatenated."""
        return self.matrix[start:stop].astype(np.int8).tobytes()


class VectorTable:
    """The vectors of one namespace, all of one ``dimension`` (see the module docstring)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.ids: list[UUID] = []  # row -> memory id
        self.rows: dict[int, int] = {}  # id.int -> row
        self._matrix: NDArray[np.float32] = np.zeros((0, dimension), dtype=np.float32)
        self._norms: NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._shared = 0  # rows a snapshot capture still reads in self._matrix
        self._share: VectorShare | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, key: int) -> bool:
        return key in self.rows

    @property
    def matrix(self) -> NDArray[np.float32]:
        """The live rows (a view: valid until the next change)."""
        return self._matrix[: len(self.ids)]

    @property
    def norms(self) -> NDArray[np.float64]:
        """The live rows' exact squared norms (a view: valid until the next change)."""
        return self._norms[: len(self.ids)]

    def row_of(self, key: int) -> int | None:
        """The row of memory ``UUID(int=key)``, or None when it has no vector."""
        return self.rows.get(key)

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

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` vectors in all (a load that knows how many are coming)."""
        capacity = self._matrix.shape[0]
        if rows > capacity:
            self._resize(max(MIN_CAPACITY, 2 * capacity, rows))

    def _resize(self, capacity: int) -> None:
        live = len(self.ids)
        # Rows past the live ones are never read: no need to zero them.
        matrix = np.empty((capacity, self.dimension), dtype=np.float32)
        matrix[:live] = self._matrix[:live]
        norms = np.empty(capacity, dtype=np.float64)
        norms[:live] = self._norms[:live]
        self._matrix, self._norms = matrix, norms
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


__all__ = [
    "MIN_CAPACITY",
    "VectorShare",
    "VectorTable",
]
