"""The embedded store's compact memories: memories held column-wise (:class:`MemoryTable`) and
the inverted index as a pair of integer arrays per term (:class:`Posting`); the links are
:mod:`~graphsvc.store.mirror.links`. A :class:`~graphsvc.model.Memory` is built only when a read
returns it.

Each memory has a *row*: rows are handed out in increasing order and never reused, so every
posting lists its rows in ascending order (a lookup is a binary search, a removal a bisect and a
delete). A removed memory leaves a hole (its columns are cleared, its terms stay in the shared
term buffer); a reopen loads the live rows only, so holes last until the next restart.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from itertools import accumulate, chain, compress, repeat
from operator import attrgetter, is_
from typing import Any, cast
from uuid import UUID, SafeUUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.model import EraseFilter, Memory, construct, uuid_of_int
from graphsvc.store.candidates import EPOCH, micros

#: Stands for "no time" in a column of microseconds (before any datetime Python can hold).
NO_TIME = -(2**63)

_construct = construct


_CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


uuid_of = uuid_of_int
_SAFETY_UNKNOWN = SafeUUID.unknown


def uuids_of(keys: Iterable[int]) -> list[UUID]:
    """``[uuid_of(key) for key in keys]`` without a call per key (a load makes one per
    memory)."""
    new, put, safety = object.__new__, object.__setattr__, _SAFETY_UNKNOWN
    made: list[UUID] = []
    append = made.append
    for key in keys:
        mid = new(UUID)
        put(mid, "int", key)
        put(mid, "is_safe", safety)
        append(mid)
    return made


_int_of = attrgetter("int")
_MICROSECOND = timedelta(microseconds=1)


def key_of(text: Any) -> int:
    """``UUID(text).int``, quicker for the canonical form the log writes.

    Raises:
        ValueError: not a UUID.
        TypeError: not a string.
    """
    if isinstance(text, str) and _CANONICAL.fullmatch(text):
        return int(text.replace("-", ""), 16)
    return UUID(text).int


def from_micros(value: int) -> datetime:
    """The UTC datetime ``value`` microseconds after the Unix epoch (exact)."""
    return EPOCH + timedelta(microseconds=value)


def _micros_or_none(value: datetime | None) -> int:
    return NO_TIME if value is None else micros(value)


def _iso_micros(value: str | None) -> int:
    return NO_TIME if value is None else micros(datetime.fromisoformat(value))


def _iso_or_none(value: int) -> str | None:
    return None if value == NO_TIME else from_micros(value).isoformat()


#: Fields of a memory's log row written before validity intervals (validFrom and validUntil
#: came last; such a row loads with neither).
OLD_ROW_FIELDS = 11


def row_matcher(spec: EraseFilter) -> Callable[[MemoryTable, int], bool]:
    """Whether a live row of a table matches an erase filter, read from its columns: what
    :meth:`EraseFilter.matches` says of the row's memory, without building the memory."""
    tag, source = spec.tag, spec.source
    since = None if spec.since is None else micros(spec.since)
    until = None if spec.until is None else micros(spec.until)
    everything = spec.everything

    def match(table: MemoryTable, row: int) -> bool:
        if everything:
            return True
        if tag is not None and tag not in table.tags[row]:
            return False
        if source is not None and table.sources[row] != source:
            return False
        if since is None and until is None:
            return True
        occurred = table.occurred[row]
        when = table.recorded[row] if occurred == NO_TIME else occurred
        return (since is None or when >= since) and (until is None or when < until)

    return match


#: Rows (or a posting of under eight times as many) that :meth:`Posting.remove_many` removes
#: one by one.
_REMOVE_ONE_BY_ONE = 4


class Posting:
    """One term's postings: ascending rows and the term's count in each."""

    __slots__ = ("rows", "tfs")

    def __init__(self) -> None:
        self.rows = array("i")
        self.tfs = array("i")

    def __len__(self) -> int:
        return len(self.rows)

    def remove(self, row: int) -> None:
        """Remove a row (it must be there)."""
        at = bisect_left(self.rows, row)
        del self.rows[at]
        del self.tfs[at]

    def remove_many(self, rows: Sequence[int]) -> None:
        """Remove ascending rows (each must be there), in one pass over a long posting:
        removing them one by one moves the rest of the posting once per row (an erase of half
        a namespace of a million memories moved the postings of its common terms half a
        million times). A few rows, or a short posting, go one by one (cheaper than numpy's
        setup)."""
        if len(rows) <= _REMOVE_ONE_BY_ONE or len(self.rows) <= _REMOVE_ONE_BY_ONE * 8:
            for row in reversed(rows):  # ascending rows, removed from the end: nothing moves twice
                self.remove(row)
            return
        mine = np.frombuffer(self.rows, dtype=np.int32)
        keep = np.ones(len(mine), dtype=bool)
        keep[np.searchsorted(mine, np.asarray(rows, dtype=np.int32))] = False
        kept_rows = mine[keep].tobytes()
        kept_tfs = np.frombuffer(self.tfs, dtype=np.int32)[keep].tobytes()
        del mine  # no view of the arrays may outlive their replacement
        self.rows = array("i", kept_rows)
        self.tfs = array("i", kept_tfs)

    def tf_of(self, rows: NDArray[np.int64]) -> NDArray[np.int64]:
        """The term's count in each of ``rows`` (ascending or not; 0 where it is absent)."""
        if not len(self.rows):
            return np.zeros(len(rows), dtype=np.int64)
        mine = np.frombuffer(self.rows, dtype=np.int32)
        at = np.searchsorted(mine, rows)
        np.minimum(at, len(mine) - 1, out=at)
        found = mine[at] == rows
        counts = np.frombuffer(self.tfs, dtype=np.int32)[at].astype(np.int64)
        counts[~found] = 0
        return counts


class MemoryTable:
    """The memories of one namespace, column-wise. As a mapping from ``id.int`` it answers
    ``key in table``, ``len(table)``, iteration over keys (in write order) and
    ``table.get(key)`` (a :class:`Memory` built on demand)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.row_of: dict[int, int] = {}  # id.int -> row
        self.ids: list[UUID | None] = []  # row -> id (None: removed)
        self.keys: list[int] = []  # row -> id.int (kept after a removal): a sort key
        self.texts: list[str | None] = []
        self.kinds: list[str] = []
        self.sources: list[str | None] = []
        self.tags: list[tuple[str, ...]] = []
        self.recorded = array("q")  # microseconds
        self.occurred = array("q")  # microseconds, or NO_TIME
        self.invalidated = array("q")  # microseconds, or NO_TIME
        self.valid_from = array("q")  # microseconds, or NO_TIME
        self.valid_until = array("q")  # microseconds, or NO_TIME
        self.confidence = array("d")
        self.tokens = array("q")
        self.lengths = array("i")  # terms per row (0 for a removed row)
        self.term_start = array("q")  # row -> its first term in term_data
        self.term_data = array("i")  # term numbers, row after row (repeats kept)
        self.term_names: list[str] = []  # term number -> term
        self.term_numbers: dict[str, int] = {}
        self.shared: dict[Any, Any] = {}  # one object for each repeated kind, source, tag tuple

    # -- the mapping ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.row_of)

    def __contains__(self, key: object) -> bool:
        return key in self.row_of

    def __iter__(self) -> Iterator[int]:
        return iter(self.row_of)

    def __bool__(self) -> bool:
        return bool(self.row_of)

    def get(self, key: int) -> Memory | None:
        """The memory with this ``id.int``, or None."""
        row = self.row_of.get(key)
        return None if row is None else self.memory(row)

    def __getitem__(self, key: int) -> Memory:
        return self.memory(self.row_of[key])

    def values(self) -> list[Memory]:
        """Every memory, in write order."""
        return self.memories(self.row_of.values())

    def uuid(self, key: int) -> UUID:
        """The id of a stored memory."""
        mid = self.ids[self.row_of[key]]
        assert mid is not None
        return mid

    def terms(self, row: int) -> tuple[str, ...]:
        """A row's analysed terms (repeats kept)."""
        start = self.term_start[row]
        numbers = self.term_data[start : start + self.lengths[row]]
        return tuple(map(self.term_names.__getitem__, numbers))

    def memory(self, row: int) -> Memory:
        """The memory of a live row."""
        return self.memories((row,))[0]

    def memories(self, rows: Iterable[int]) -> list[Memory]:
        """The memories of live rows, in that order (a query's window reads some fifty at
        once: the columns are looked up once for all of them)."""
        ids, texts, kinds, tags, sources = self.ids, self.texts, self.kinds, self.tags, self.sources
        recorded, occurred, invalidated = self.recorded, self.occurred, self.invalidated
        confidence, tokens, namespace = self.confidence, self.tokens, self.namespace
        starts, lengths, data = self.term_start, self.lengths, self.term_data
        valid_from, valid_until = self.valid_from, self.valid_until
        name_of = self.term_names.__getitem__
        made = []
        for row in rows:
            at, gone, start = occurred[row], invalidated[row], starts[row]
            since, until = valid_from[row], valid_until[row]
            made.append(
                _construct(
                    Memory,
                    {
                        "id": ids[row],
                        "namespace": namespace,
                        "text": texts[row],
                        "kind": kinds[row],
                        "occurred_at": None if at == NO_TIME else from_micros(at),
                        "recorded_at": from_micros(recorded[row]),
                        "invalidated_at": None if gone == NO_TIME else from_micros(gone),
                        "tags": tags[row],
                        "source": sources[row],
                        "confidence": confidence[row],
                        "tokens": tokens[row],
                        "terms": tuple(map(name_of, data[start : start + lengths[row]])),
                        "valid_from": None if since == NO_TIME else from_micros(since),
                        "valid_until": None if until == NO_TIME else from_micros(until),
                    },
                )
            )
        return made

    def when(self, row: int) -> int:
        """A row's ``occurredAt`` in microseconds when known, else its ``recordedAt``."""
        occurred = self.occurred[row]
        return self.recorded[row] if occurred == NO_TIME else occurred

    def valid_start(self, row: int) -> int:
        """When a row is true from, in microseconds: ``validFrom``, else :meth:`when`."""
        since = self.valid_from[row]
        return self.when(row) if since == NO_TIME else since

    # -- changes --------------------------------------------------------------------------------

    def _share(self, value: Any) -> Any:
        return self.shared.setdefault(value, value)

    def _append(
        self,
        mid: UUID,
        text: str,
        kind: str,
        occurred: int,
        recorded: int,
        invalidated: int,
        tags: tuple[str, ...],
        source: str | None,
        confidence: float,
        tokens: int,
        terms: Sequence[str],
        valid_from: int = NO_TIME,
        valid_until: int = NO_TIME,
    ) -> int:
        """Add a memory that is not stored; its row."""
        row = len(self.ids)
        key = mid.int
        self.row_of[key] = row
        self.ids.append(mid)
        self.keys.append(key)
        self.texts.append(text)
        self.kinds.append(self._share(kind))
        self.sources.append(None if source is None else self._share(source))
        self.tags.append(self._share(tags) if tags else ())
        self.recorded.append(recorded)
        self.occurred.append(occurred)
        self.invalidated.append(invalidated)
        self.valid_from.append(valid_from)
        self.valid_until.append(valid_until)
        self.confidence.append(confidence)
        self.tokens.append(tokens)
        self.lengths.append(len(terms))
        self.term_start.append(len(self.term_data))
        numbers = self.term_numbers
        found = list(map(numbers.get, terms))
        if None in found:  # new terms: number them (a repeat gets the number its first got)
            names = self.term_names
            for at, term in enumerate(terms):
                if found[at] is None:
                    number = numbers.get(term)
                    if number is None:
                        number = numbers[term] = len(names)
                        names.append(term)
                    found[at] = number
        self.term_data.extend(found)  # type: ignore[arg-type]
        return row

    def add(self, memory: Memory) -> int:
        """Add a memory that is not stored; its row."""
        return self._append(
            memory.id,
            memory.text,
            memory.kind,
            _micros_or_none(memory.occurred_at),
            micros(memory.recorded_at),
            _micros_or_none(memory.invalidated_at),
            tuple(memory.tags),
            memory.source,
            memory.confidence,
            memory.tokens,
            memory.terms,
            _micros_or_none(memory.valid_from),
            _micros_or_none(memory.valid_until),
        )

    def add_columns(self, columns: Sequence[Sequence[Any]]) -> range:
        """Add memories that are not stored (each once), given as the columns of their fields
        (:data:`~graphsvc.store.mirror.rows.memory_fields`' order); their rows. The same columns
        as :meth:`add` one memory at a time, filled column by column (every value is computed
        before any column grows)."""
        first = len(self.ids)
        if not columns:
            return range(first, first)
        (
            ids,
            texts,
            kinds,
            occurred,
            recorded,
            invalidated,
            tags,
            sources,
            confidence,
            tokens,
            terms,
            valid_from,
            valid_until,
        ) = columns
        count = len(ids)
        keys = list(map(_int_of, ids))
        share = self.shared.setdefault
        kinds = list(map(share, kinds, kinds))
        sources = list(map(share, sources, sources))  # None stays None
        tags = list(map(tuple, tags))
        tags = list(map(share, tags, tags))
        epoch, step = EPOCH, _MICROSECOND
        recorded_at = array("q", [(t - epoch) // step for t in recorded])
        occurred_at = array("q", [NO_TIME if t is None else (t - epoch) // step for t in occurred])
        invalidated_at = array(
            "q", [NO_TIME if t is None else (t - epoch) // step for t in invalidated]
        )
        since = array("q", [NO_TIME if t is None else (t - epoch) // step for t in valid_from])
        until = array("q", [NO_TIME if t is None else (t - epoch) // step for t in valid_until])
        confidences, token_counts = array("d", confidence), array("q", tokens)
        lengths = array("i", map(len, terms))
        starts = array("q", accumulate(lengths, initial=len(self.term_data)))
        terms = list(chain.from_iterable(terms))
        numbers = self.term_numbers
        found = list(map(numbers.get, terms))
        new_names: list[str] = []
        if None in found:  # new terms: numbered in order of first appearance
            new_names = list(dict.fromkeys(compress(terms, map(is_, found, repeat(None)))))
            base = len(self.term_names)
            fresh = dict(zip(new_names, range(base, base + len(new_names)), strict=True))
            found = list(map(fresh.get, terms, found))  # a known term's number is the default
        data = array("i", cast("list[int]", found))  # every None is numbered now
        # Nothing has changed yet; from here on only containers grow.
        for number, term in enumerate(new_names, start=len(self.term_names)):
            numbers[term] = number
        self.term_names.extend(new_names)
        self.row_of.update(zip(keys, range(first, first + count), strict=True))
        self.ids.extend(ids)
        self.keys.extend(keys)
        self.texts.extend(texts)
        self.kinds.extend(kinds)
        self.sources.extend(sources)
        self.tags.extend(tags)
        self.recorded.extend(recorded_at)
        self.occurred.extend(occurred_at)
        self.invalidated.extend(invalidated_at)
        self.valid_from.extend(since)
        self.valid_until.extend(until)
        self.confidence.extend(confidences)
        self.tokens.extend(token_counts)
        self.lengths.extend(lengths)
        self.term_start.extend(starts[:-1])
        self.term_data.extend(data)
        return range(first, first + count)

    def add_row(self, row: Sequence[Any]) -> int:
        """Add a memory from its log row (:func:`~graphsvc.store.mirror.rows.log_memory_row`; a
        row written before validity intervals has no last two fields)."""
        mid, text, kind, occ, rec, inv, tags, source, conf, tokens, terms, since, until = (
            row if len(row) != OLD_ROW_FIELDS else (*row, None, None)
        )
        if not isinstance(text, str) or not isinstance(kind, str) or not isinstance(rec, str):
            raise TypeError(f"not a memory row: {row!r}"[:200])
        return self._append(
            uuid_of(key_of(mid)),
            text,
            kind,
            _iso_micros(occ),
            _iso_micros(rec),
            _iso_micros(inv),
            tuple(tags),
            source,
            float(conf),
            int(tokens),
            terms,
            _iso_micros(since),
            _iso_micros(until),
        )

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> range:
        """:meth:`add_row` for each of a log record's rows, as one :meth:`add_columns` (the same
        columns, the same term numbers; nothing changes when a row is no memory row); their
        rows."""
        if not rows:
            return range(len(self.ids), len(self.ids))
        if any(len(row) == OLD_ROW_FIELDS for row in rows):
            rows = [row if len(row) != OLD_ROW_FIELDS else (*row, None, None) for row in rows]
        (
            ids,
            texts,
            kinds,
            occurred,
            recorded,
            invalidated,
            tags,
            sources,
            confidence,
            tokens,
            terms,
            valid_from,
            valid_until,
        ) = zip(*rows, strict=True)
        for text, kind, rec in zip(texts, kinds, recorded, strict=True):
            if not isinstance(text, str) or not isinstance(kind, str) or not isinstance(rec, str):
                raise TypeError("not a memory row: text, kind and recordedAt must be strings")
        parse = datetime.fromisoformat
        return self.add_columns(
            [
                uuids_of(map(key_of, ids)),
                texts,
                kinds,
                [None if t is None else parse(t) for t in occurred],
                list(map(parse, recorded)),
                [None if t is None else parse(t) for t in invalidated],
                tags,
                sources,
                list(map(float, confidence)),
                list(map(int, tokens)),
                terms,
                [None if t is None else parse(t) for t in valid_from],
                [None if t is None else parse(t) for t in valid_until],
            ]
        )

    def remove(self, key: int) -> int | None:
        """Remove a memory; its former row, or None when it is not stored."""
        row = self.row_of.pop(key, None)
        if row is None:
            return None
        self.ids[row] = None
        self.texts[row] = None
        self.tags[row] = ()
        self.sources[row] = None
        self.lengths[row] = 0
        return row

    def term_counts(self, row: int) -> dict[int, int]:
        """A row's term numbers with their counts."""
        start = self.term_start[row]
        return Counter(self.term_data[start : start + self.lengths[row]])

    def row_form(self, row: int) -> list[Any]:
        """A live row in the log's form (:func:`~graphsvc.store.mirror.rows.log_memory_row`)."""
        occurred, invalidated = self.occurred[row], self.invalidated[row]
        return [
            str(self.ids[row]),
            self.texts[row],
            self.kinds[row],
            None if occurred == NO_TIME else from_micros(occurred).isoformat(),
            from_micros(self.recorded[row]).isoformat(),
            None if invalidated == NO_TIME else from_micros(invalidated).isoformat(),
            list(self.tags[row]),
            self.sources[row],
            self.confidence[row],
            self.tokens[row],
            list(self.terms(row)),
            _iso_or_none(self.valid_from[row]),
            _iso_or_none(self.valid_until[row]),
        ]

    def copy(self) -> MemoryTable:
        """A consistent copy for a snapshot written while writes go on (its items are immutable
        and shared; the containers are copied, so that the copy can be read without the lock
        and through numpy views)."""
        other = MemoryTable.__new__(MemoryTable)
        other.__dict__.update(self.__dict__)
        other.row_of = dict(self.row_of)
        for name in ("ids", "texts", "kinds", "sources", "tags", "term_names"):
            setattr(other, name, list(getattr(self, name)))
        for name in (
            "recorded",
            "occurred",
            "invalidated",
            "valid_from",
            "valid_until",
            "confidence",
            "tokens",
            "lengths",
            "term_start",
            "term_data",
        ):
            setattr(other, name, getattr(self, name)[:])
        other.term_numbers = {}
        other.shared = {}
        return other

    def rows(self) -> list[int]:
        """The live rows, in write order."""
        return list(self.row_of.values())
