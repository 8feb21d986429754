"""The service's clock: the times it records never go backwards, so recorded order is write
order."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import date, datetime, timedelta

from graphsvc.model import utcnow


class ServiceClock:
    """Hands out the times a service records, over a time source (tests pass a fixed one).

    Args:
        source: the time source, in UTC.
    """

    def __init__(self, source: Callable[[], datetime] = utcnow) -> None:
        self._source = source
        self._last = datetime.min.replace(tzinfo=utcnow().tzinfo)
        self._lock = threading.Lock()

    def now(self, count: int = 1) -> datetime:
        """A timestamp after every one handed out before; ``count`` reserves that many
        consecutive microseconds (one per memory of a batch, so recorded order is total)."""
        with self._lock:
            now = self._source()
            if now <= self._last:
                now = self._last + timedelta(microseconds=1)
            self._last = now + timedelta(microseconds=count - 1)
            return now

    def instant(self) -> datetime:
        """Now, for a read: never before a time this clock handed out, so that nothing it
        recorded is in the future of a read that follows."""
        with self._lock:
            return max(self._source(), self._last)

    def today(self) -> date:
        """The source's day now (in UTC: the source is UTC), as a prompt's date line says it."""
        return self._source().date()
