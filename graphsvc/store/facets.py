"""What an overview counts memories by (:meth:`~graphsvc.store.base.MemoryReads.facet_counts`):
the facets, the pairs a memory counts under, how a write changes the counts, and the answer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from graphsvc.errors import BadInputError
from graphsvc.model import Memory

#: What an overview counts memories by (:meth:`Store.facet_counts`): ``kind``; ``tag`` (each
#: distinct tag of a memory); ``source`` (memories without one are not counted); ``day`` (the UTC
#: day of :attr:`Memory.when`, ``YYYY-MM-DD``); ``recorded`` (the UTC day of ``recordedAt``: the
#: days a KNOWN view changes); ``valid`` (the UTC days its validity starts and, with a
#: ``validUntil``, ends: with the starts of the memories that supersede others, the days a VALID
#: view changes).
FACETS = ("kind", "tag", "source", "day", "recorded", "valid")
#: The facets whose values are days: read latest first, not most frequent first.
DAY_FACETS = frozenset({"day", "recorded", "valid"})


def _utc_day(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def memory_facets(memory: Memory) -> list[tuple[str, str]]:
    """The ``(facet, value)`` pairs a memory counts under, each once."""
    pairs = [
        ("kind", memory.kind),
        ("day", _utc_day(memory.when)),
        ("recorded", _utc_day(memory.recorded_at)),
    ]
    changes = {_utc_day(memory.valid_start)}
    if memory.valid_until is not None:
        changes.add(_utc_day(memory.valid_until))
    pairs += [("valid", day) for day in sorted(changes)]
    pairs += [("tag", tag) for tag in dict.fromkeys(memory.tags)]
    if memory.source is not None:
        pairs.append(("source", memory.source))
    return pairs


def facet_deltas(
    added: Iterable[Iterable[tuple[str, str]]], removed: Iterable[Iterable[tuple[str, str]]]
) -> list[tuple[str, str, int]]:
    """How the facet counts change when memories with these pairs (:func:`memory_facets`) are
    added and removed: ``(facet, value, delta)``, sorted, no zero delta."""
    counts: Counter[tuple[str, str]] = Counter()
    for pairs in added:
        counts.update(pairs)
    for pairs in removed:
        counts.subtract(pairs)
    return [(facet, value, n) for (facet, value), n in sorted(counts.items()) if n]


def facet_order(value: str) -> str:
    """The order both stores give facet values of equal count: Unicode code points, Python's
    order of strings, and Neo4j's for stored strings (a string sent as a parameter compares by
    UTF-16 code units there, which differs above U+FFFF; the contract test pins the stored
    order)."""
    return value


@dataclass(frozen=True)
class FacetCounts:
    """The most frequent values of one facet of a namespace (:meth:`Store.facet_counts`), and how
    many distinct values it has."""

    facet: str
    distinct: int
    top: tuple[tuple[str, int], ...]


def bad_facet(facet: str) -> BadInputError:
    return BadInputError(f"unknown facet {facet!r}: use one of {', '.join(FACETS)}")


__all__ = [
    "DAY_FACETS",
    "FACETS",
    "FacetCounts",
    "bad_facet",
    "facet_deltas",
    "facet_order",
    "memory_facets",
]
