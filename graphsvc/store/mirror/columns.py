"""The body of a version-3 snapshot: a namespace's memories, postings and links as binary columns,
each chunk one frame of the snapshot (:mod:`graphsvc.store.journal`) whose JSON payload carries the
columns base64-encoded, so that loading is a few bulk copies per chunk rather than a parse per row.

Records, in this order for each namespace (all integers little-endian):

- ``terms``: ``first`` (the number of the first name) and ``names``: the namespace's term names,
  numbered from 0 in order.
- ``columns``: a chunk of ``count`` memories in write order: ``ids`` (16 bytes each), ``texts``,
  ``kinds``, ``sources``, ``tags`` (JSON lists), ``times`` (int64 µs: recordedAt, occurredAt,
  invalidatedAt for each memory, :data:`~graphsvc.store.mirror.table.NO_TIME` for none),
  ``validity`` (int64 µs: validFrom, validUntil for each memory, NO_TIME for none; absent in
  snapshots written before validity intervals, whose memories then have neither),
  ``confidence`` (float64), ``tokens`` (int64), ``lengths`` (int32: terms per memory) and
  ``terms`` (int32 term numbers, memory after memory, repeats kept).
- ``postings``: for a run of terms, ``terms`` (int32 numbers), ``df`` (int32: postings per term),
  ``rows`` (int32: the memories' positions in the snapshot, ascending per term) and ``tfs``.
- ``linkColumns``: a chunk of links: ``sources`` and ``targets`` (16 bytes each), ``kinds`` (int8,
  the position in :data:`LINK_KINDS`), ``weights`` (float64), ``created`` (int64 µs) and ``notes``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pybase64
from numpy.typing import NDArray

from graphsvc.model import LinkKind
from graphsvc.store.mirror.links import LinkTuple
from graphsvc.store.mirror.table import NO_TIME, MemoryTable, uuids_of

#: Memories (or links) per ``columns`` (``linkColumns``) record.
COLUMN_CHUNK = 20_000
#: Term names per ``terms`` record, postings per ``postings`` record.
TERM_CHUNK = 50_000
POSTING_CHUNK = 500_000
#: Link kinds by their position in a ``linkColumns`` record.
LINK_KINDS = tuple(kind.value for kind in LinkKind)
_KIND_INDEX = {kind: index for index, kind in enumerate(LINK_KINDS)}
_STR = frozenset({str})
_NOTE_TYPES = frozenset({str, type(None)})


def _b64(data: bytes | NDArray[Any]) -> str:
    raw = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
    return base64.b64encode(raw).decode("ascii")


def _decode(value: Any, name: str) -> bytes:
    """The bytes of a base64 column (strict: only the alphabet, padding only at the end).

    Raises:
        TypeError: it is not text.
        ValueError: it is not base64.
    """
    if not isinstance(value, str):
        raise TypeError(f"column {name} is not base64 text")
    return decode_base64(value)


def decode_base64(text: str) -> bytes:
    """Strict base64 (only the alphabet, padding only at the end) from pybase64's SIMD decoder,
    ten times binascii's pace: a snapshot at a million memories holds half a gigabyte of it.

    Raises:
        ValueError: it is not base64 (``binascii.Error``, a ValueError).
    """
    return pybase64.b64decode(text, validate=True)


def _array(value: Any, dtype: type[np.generic], count: int, name: str) -> NDArray[Any]:
    """A base64 column of ``count`` items.

    Raises:
        ValueError: it is not that (bad base64, a wrong size).
    """
    data = np.frombuffer(_decode(value, name), dtype=np.dtype(dtype).newbyteorder("<"))
    if len(data) != count:
        raise ValueError(f"column {name} holds {len(data)} items where {count} are expected")
    return data.astype(dtype)


def _list(value: Any, count: int, name: str) -> list[Any]:
    if not isinstance(value, list) or len(value) != count:
        raise ValueError(f"column {name} is not a list of {count} items")
    return value


def gather_terms(table: MemoryTable, rows: NDArray[np.int64]) -> NDArray[np.int32]:
    """The term numbers of ``rows``, row after row."""
    starts = np.frombuffer(table.term_start, dtype=np.int64)[rows]
    lengths = np.frombuffer(table.lengths, dtype=np.int32)[rows].astype(np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int32)
    offsets = np.cumsum(lengths) - lengths
    index = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, lengths)
    data: NDArray[np.int32] = np.frombuffer(table.term_data, dtype=np.int32)
    found: NDArray[np.int32] = data[index]
    return found


def table_records(ns: str, table: MemoryTable) -> Iterator[dict[str, Any]]:
    """The records of a namespace's memories and postings. ``table`` must be a private copy
    (:meth:`MemoryTable.copy`): its arrays are read through numpy views."""
    names = table.term_names
    for first in range(0, len(names), TERM_CHUNK):
        yield {"op": "terms", "ns": ns, "first": first, "names": names[first : first + TERM_CHUNK]}
    live = np.asarray(table.rows(), dtype=np.int64)
    recorded = np.frombuffer(table.recorded, dtype=np.int64)
    occurred = np.frombuffer(table.occurred, dtype=np.int64)
    invalidated = np.frombuffer(table.invalidated, dtype=np.int64)
    valid_from = np.frombuffer(table.valid_from, dtype=np.int64)
    valid_until = np.frombuffer(table.valid_until, dtype=np.int64)
    confidence = np.frombuffer(table.confidence, dtype=np.float64)
    tokens = np.frombuffer(table.tokens, dtype=np.int64)
    lengths = np.frombuffer(table.lengths, dtype=np.int32)
    ids, texts, kinds, sources, tags = (
        table.ids,
        table.texts,
        table.kinds,
        table.sources,
        table.tags,
    )
    for first in range(0, len(live), COLUMN_CHUNK):
        rows = live[first : first + COLUMN_CHUNK]
        listed = rows.tolist()
        times = np.stack([recorded[rows], occurred[rows], invalidated[rows]], axis=1)
        yield {
            "op": "columns",
            "ns": ns,
            "count": len(listed),
            "ids": _b64(b"".join([ids[r].bytes for r in listed])),
            "texts": [texts[r] for r in listed],
            "kinds": [kinds[r] for r in listed],
            "sources": [sources[r] for r in listed],
            "tags": [list(tags[r]) for r in listed],
            "times": _b64(times.astype("<i8")),
            "validity": _b64(np.stack([valid_from[rows], valid_until[rows]], axis=1).astype("<i8")),
            "confidence": _b64(confidence[rows].astype("<f8")),
            "tokens": _b64(tokens[rows].astype("<i8")),
            "lengths": _b64(lengths[rows].astype("<i4")),
            "terms": _b64(gather_terms(table, rows).astype("<i4")),
        }
    yield from _posting_records(ns, table, live)


def _posting_records(
    ns: str, table: MemoryTable, live: NDArray[np.int64]
) -> Iterator[dict[str, Any]]:
    """The postings of the live rows, computed from their terms (rows numbered as written)."""
    count = len(live)
    if not count:
        return
    terms = gather_terms(table, live).astype(np.int64)
    lengths = np.frombuffer(table.lengths, dtype=np.int32)[live].astype(np.int64)
    positions = np.repeat(np.arange(count, dtype=np.int64), lengths)
    pairs, tfs = np.unique(terms * count + positions, return_counts=True)
    numbers, rows = pairs // count, pairs % count
    starts = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1]]) if len(pairs) else pairs
    ends = np.r_[starts[1:], len(pairs)]
    first = 0
    while first < len(starts):
        last = first + 1
        while last < len(starts) and ends[last] - starts[first] <= POSTING_CHUNK:
            last += 1
        low, high = int(starts[first]), int(ends[last - 1])
        yield {
            "op": "postings",
            "ns": ns,
            "terms": _b64(numbers[starts[first:last]].astype("<i4")),
            "df": _b64((ends[first:last] - starts[first:last]).astype("<i4")),
            "rows": _b64(rows[low:high].astype("<i4")),
            "tfs": _b64(tfs[low:high].astype("<i4")),
        }
        first = last


def link_records(ns: str, links: Sequence[LinkTuple]) -> Iterator[dict[str, Any]]:
    """The records of a namespace's links."""
    for first in range(0, len(links), COLUMN_CHUNK):
        chunk = links[first : first + COLUMN_CHUNK]
        yield {
            "op": "linkColumns",
            "ns": ns,
            "count": len(chunk),
            "sources": _b64(b"".join([lk[0].to_bytes(16, "big") for lk in chunk])),
            "targets": _b64(b"".join([lk[1].to_bytes(16, "big") for lk in chunk])),
            "kinds": _b64(np.array([_KIND_INDEX[lk[2]] for lk in chunk], dtype="<i1")),
            "weights": _b64(np.array([lk[3] for lk in chunk], dtype="<f8")),
            "created": _b64(np.array([lk[4] for lk in chunk], dtype="<i8")),
            "notes": [lk[5] for lk in chunk],
        }


def _keys(data: Any, count: int, name: str) -> list[int]:
    """A column of ids (16 bytes each, big-endian) as ``id.int``: the two halves read by numpy,
    joined by Python."""
    raw = _decode(data, name)
    if len(raw) != 16 * count:
        raise ValueError(f"column {name} holds {len(raw)} bytes for {count} ids")
    halves = np.frombuffer(raw, dtype=">u8")
    high, low = halves[0::2].tolist(), halves[1::2].tolist()
    return [h << 64 | lo for h, lo in zip(high, low, strict=True)]


def load_terms(table: MemoryTable, value: dict[str, Any]) -> None:
    """Load a ``terms`` record.

    Raises:
        ValueError: it does not continue the names loaded so far.
    """
    names = value["names"]
    if value["first"] != len(table.term_names) or not isinstance(names, list):
        raise ValueError("term names out of order")
    for name in names:
        if not isinstance(name, str) or name in table.term_numbers:
            raise ValueError(f"a bad or repeated term name {name!r}")
        table.term_numbers[name] = len(table.term_names)
        table.term_names.append(name)


def load_columns(table: MemoryTable, value: dict[str, Any]) -> range:
    """Load a ``columns`` record; the rows it added.

    Raises:
        ValueError: a column of the wrong size or type, or a term number out of range.
    """
    count = value["count"]
    if not isinstance(count, int) or count < 0:
        raise ValueError("a bad count")
    keys = _keys(value["ids"], count, "ids")
    texts = _list(value["texts"], count, "texts")
    kinds = _list(value["kinds"], count, "kinds")
    sources = _list(value["sources"], count, "sources")
    tags = _list(value["tags"], count, "tags")
    times = _array(value["times"], np.int64, 3 * count, "times").reshape(count, 3)
    validity = (
        _array(value["validity"], np.int64, 2 * count, "validity").reshape(count, 2)
        if "validity" in value
        else np.full((count, 2), NO_TIME, dtype=np.int64)
    )
    confidence = _array(value["confidence"], np.float64, count, "confidence")
    tokens = _array(value["tokens"], np.int64, count, "tokens")
    lengths = _array(value["lengths"], np.int32, count, "lengths")
    terms = _array(value["terms"], np.int32, int(lengths.sum()), "terms")
    if (lengths < 0).any() or (
        len(terms) and (terms.min() < 0 or terms.max() >= len(table.term_names))
    ):
        raise ValueError("term numbers out of range")
    if not set(map(type, texts)) <= _STR or not set(map(type, kinds)) <= _STR:
        raise TypeError("texts and kinds must be strings")
    held = table.row_of
    first, known = len(table.ids), len(held)
    held.update(zip(keys, range(first, first + count), strict=True))
    if len(held) != known + count:  # a repeat: the load fails and its state is dropped
        raise ValueError("a memory is stored twice")
    share = table.shared.setdefault
    tags = list(map(tuple, tags))  # () is one object: shared as it is
    table.ids.extend(uuids_of(keys))
    table.keys.extend(keys)
    table.texts.extend(texts)
    table.kinds.extend(map(share, kinds, kinds))
    table.sources.extend(map(share, sources, sources))  # None stays None
    table.tags.extend(map(share, tags, tags))
    table.recorded.frombytes(times[:, 0].tobytes())
    table.occurred.frombytes(np.ascontiguousarray(times[:, 1]).tobytes())
    table.invalidated.frombytes(np.ascontiguousarray(times[:, 2]).tobytes())
    table.valid_from.frombytes(np.ascontiguousarray(validity[:, 0]).tobytes())
    table.valid_until.frombytes(np.ascontiguousarray(validity[:, 1]).tobytes())
    table.confidence.frombytes(confidence.tobytes())
    table.tokens.frombytes(tokens.tobytes())
    table.lengths.frombytes(lengths.tobytes())
    starts = len(table.term_data) + np.cumsum(lengths, dtype=np.int64) - lengths
    table.term_start.frombytes(starts.tobytes())
    table.term_data.frombytes(terms.tobytes())
    return range(first, first + count)


def load_postings(
    table: MemoryTable, first_row: int, value: dict[str, Any]
) -> Iterator[tuple[str, memoryview, memoryview]]:
    """The postings of a ``postings`` record: (term, rows, counts) as the bytes of int32 arrays
    (what :class:`~graphsvc.store.mirror.table.Posting` extends itself from), rows numbered in
    the table (the snapshot's positions plus ``first_row``, where the namespace's rows start).

    Raises:
        ValueError: sizes that do not add up, a term or row out of range, rows not ascending.
    """
    numbers = value["terms"]
    terms = np.frombuffer(_decode(numbers, "terms"), dtype="<i4").astype(np.int64)
    df = _array(value["df"], np.int32, len(terms), "df").astype(np.int64)
    total = int(df.sum())
    rows = _array(value["rows"], np.int32, total, "rows")
    tfs = _array(value["tfs"], np.int32, total, "tfs")
    names = table.term_names
    if len(terms) and (terms.min() < 0 or terms.max() >= len(names) or (df < 1).any()):
        raise ValueError("a term out of range")
    live = len(table.ids) - first_row
    if total and (rows.min() < 0 or rows.max() >= live or tfs.min() < 1):
        raise ValueError("a posting out of range")
    ends = np.cumsum(df)
    starts = ends - df
    steps = np.diff(rows)
    if len(steps):
        inner = np.ones(len(steps), dtype=bool)
        inner[starts[1:] - 1] = False  # where one term's rows end and the next one's start
        if (steps[inner] <= 0).any():
            raise ValueError("postings not ascending")
    if first_row:
        rows = rows + np.int32(first_row)  # below the table's row count: no overflow
    # Byte views of the whole runs: a term's slice of them costs no array of its own.
    row_bytes, tf_bytes = rows.data.cast("B"), tfs.data.cast("B")
    width = rows.itemsize
    for number, low, high in zip(
        terms.tolist(), (starts * width).tolist(), (ends * width).tolist(), strict=True
    ):
        yield names[number], row_bytes[low:high], tf_bytes[low:high]


def load_links(value: dict[str, Any], table: MemoryTable) -> list[LinkTuple]:
    """The links of a ``linkColumns`` record (between memories of ``table``).

    Raises:
        ValueError: a column of the wrong size or type, an unknown kind, a link to a memory
            that is not stored.
    """
    count = value["count"]
    if not isinstance(count, int) or count < 0:
        raise ValueError("a bad count")
    sources = _keys(value["sources"], count, "sources")
    targets = _keys(value["targets"], count, "targets")
    kinds = _array(value["kinds"], np.int8, count, "kinds")
    if len(kinds) and (kinds.min() < 0 or kinds.max() >= len(LINK_KINDS)):
        raise ValueError("an unknown link kind")
    weights = _array(value["weights"], np.float64, count, "weights").tolist()
    created = _array(value["created"], np.int64, count, "created").tolist()
    notes = _list(value["notes"], count, "notes")
    if not set(map(type, notes)) <= _NOTE_TYPES:
        raise TypeError("notes must be strings or null")
    stored = table.row_of.__contains__
    if not all(map(stored, sources)) or not all(map(stored, targets)):
        raise ValueError("a link to a memory that is not stored")
    names = list(map(LINK_KINDS.__getitem__, kinds.tolist()))
    return list(zip(sources, targets, names, weights, created, notes, strict=True))
