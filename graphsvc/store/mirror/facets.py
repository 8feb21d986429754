"""The embedded store's facet counts (:meth:`~graphsvc.store.base.Store.facet_counts`): how many
memories of a namespace have each kind, tag, source and day, kept as rows are indexed and
removed, so an overview reads a few counters instead of every memory."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from graphsvc.store.facets import FacetCounts, bad_facet, facet_order
from graphsvc.store.mirror.table import NO_TIME, MemoryTable

_DAY_US = 86_400_000_000
_EPOCH_DAY = date(1970, 1, 1)


def _drop_spent(counter: Counter[Any], value: Any) -> None:
    if counter[value] <= 0:
        del counter[value]


class Facets:
    """Counters per facet. Days are kept as day numbers since 1970-01-01 (an integer division of
    the row's time, cheap at load) and named ``YYYY-MM-DD`` only when read."""

    __slots__ = ("days", "kinds", "recorded", "sources", "tags", "valid")

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.tags: Counter[str] = Counter()
        self.sources: Counter[str] = Counter()
        self.days: Counter[int] = Counter()
        self.recorded: Counter[int] = Counter()
        self.valid: Counter[int] = Counter()

    def _change(self, table: MemoryTable, rows: Iterable[int], step: int) -> None:
        kinds, tags, sources, days = self.kinds, self.tags, self.sources, self.days
        recorded, valid, until = self.recorded, self.valid, table.valid_until
        for row in rows:
            kind = table.kinds[row]
            kinds[kind] += step
            row_tags = dict.fromkeys(table.tags[row])
            for tag in row_tags:
                tags[tag] += step
            source = table.sources[row]
            if source is not None:
                sources[source] += step
            day = table.when(row) // _DAY_US
            days[day] += step
            known = table.recorded[row] // _DAY_US
            recorded[known] += step
            start = table.valid_start(row) // _DAY_US
            valid[start] += step
            end = until[row]
            end_day = end // _DAY_US if end != NO_TIME and end // _DAY_US != start else None
            if end_day is not None:
                valid[end_day] += step
            if step < 0:  # drop what reached 0: only the row's own values can have
                _drop_spent(kinds, kind)
                for tag in row_tags:
                    _drop_spent(tags, tag)
                if source is not None:
                    _drop_spent(sources, source)
                _drop_spent(days, day)
                _drop_spent(recorded, known)
                _drop_spent(valid, start)
                if end_day is not None:
                    _drop_spent(valid, end_day)

    def add(self, table: MemoryTable, rows: Iterable[int]) -> None:
        """Count live rows just added."""
        self._change(table, rows, 1)

    def remove(self, table: MemoryTable, row: int) -> None:
        """Uncount a live row about to be removed (its columns still hold its values)."""
        self._change(table, (row,), -1)

    def top(self, facet: str, top: int) -> FacetCounts:
        """As :meth:`~graphsvc.store.base.Store.facet_counts`."""
        by_day = {"day": self.days, "recorded": self.recorded, "valid": self.valid}.get(facet)
        if by_day is not None:
            latest = heapq.nlargest(top, by_day)
            named = tuple(
                ((_EPOCH_DAY + timedelta(days=day)).isoformat(), by_day[day]) for day in latest
            )
            return FacetCounts(facet, len(by_day), named)
        counter = {"kind": self.kinds, "tag": self.tags, "source": self.sources}.get(facet)
        if counter is None:
            raise bad_facet(facet)
        best = heapq.nsmallest(top, counter.items(), key=lambda vn: (-vn[1], facet_order(vn[0])))
        return FacetCounts(facet, len(counter), tuple(best))


__all__ = ["Facets"]
