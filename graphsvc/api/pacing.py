"""Nested graph fields handed to graphql-core a few at a time, so that other work gets the loop.

graphql-core completes a resolver's value (a list of links, a memory and everything selected
under it) on the event loop, in the turn the resolver's await returns. A loader batch answers
hundreds of resolvers at once: a request reading thousands of links completed them in a handful
of long turns, and every other request, ``/healthz`` included, waited for each. Here the rows of
the nested graph fields (``links``, ``sourceMemory``, ``targetMemory``, ``history``) are handed
out at most :data:`ROWS_PER_TURN` per turn of the loop, callers (API keys) taking turns, and the
rest wait for the next turn (:class:`Pacer`). Between turns the loop answers whatever else came.

The loop is not the only thing shared: store calls of other requests run in worker threads,
which need the interpreter lock that a busy loop holds. While a store call other than a graph
loader's runs in a thread, each turn is followed by :data:`YIELD_SECONDS` with no graph rows
handed out, so the lock goes to that thread: nested reads use what the other tenants leave and
take nothing from them, and on a server with nothing else to do they run at full speed.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

from anyio import CapacityLimiter

#: Rows of nested graph fields handed to graphql-core per turn of the event loop, at most (a
#: resolver's rows are handed whole, so a turn may pass it by one resolver's). Completing a row
#: (a link or a memory with its selection) costs graphql-core some 30-80 us of the loop, so a
#: turn of graph work is a few milliseconds (docs/benchmarks.md).
ROWS_PER_TURN = 50
#: Seconds between turns of graph rows while another request's store call runs in a thread.
YIELD_SECONDS = 0.002


class Pacer:
    """Hands out the rows of nested graph fields per turn of the event loop (see the module).
    One per event loop (:func:`pacer`).

    Args:
        rows_per_turn: rows handed out per turn before the rest wait for the next.
    """

    def __init__(self, rows_per_turn: int = ROWS_PER_TURN) -> None:
        self.rows_per_turn = rows_per_turn
        #: The store's thread limiter (what other requests' store calls hold) and how many of
        #: its tokens graph loaders hold now.
        self.limiter: CapacityLimiter | None = None
        self.graph_calls = 0
        self._given = 0
        self._turn_scheduled = False
        self._queues: dict[str, deque[tuple[int, asyncio.Future[None]]]] = {}

    async def take(self, caller: str, rows: int) -> None:
        """Wait for the turn in which ``caller`` may hand ``rows`` rows to graphql-core."""
        if not self._queues and self._given < self.rows_per_turn:
            self._given += rows
            self._next_turn()
            return
        ready = asyncio.get_running_loop().create_future()
        self._queues.setdefault(caller, deque()).append((rows, ready))
        self._next_turn()
        await ready

    def others_busy(self) -> bool:
        """Whether a store call other than a graph loader's runs in a worker thread now."""
        limiter = self.limiter
        return limiter is not None and limiter.borrowed_tokens > self.graph_calls

    def _next_turn(self) -> None:
        if self._turn_scheduled:
            return
        self._turn_scheduled = True
        loop = asyncio.get_running_loop()
        if self._queues and self.others_busy():
            loop.call_later(YIELD_SECONDS, self._turn)
        else:
            loop.call_soon(self._turn)

    def _turn(self) -> None:
        """A new turn of the loop: hand out the waiting rows, callers in turn, up to the
        turn's share; the rest wait for the next turn."""
        self._turn_scheduled = False
        self._given = 0
        queues = self._queues
        while queues and self._given < self.rows_per_turn:
            for caller in list(queues):
                waiting = queues[caller]
                rows, ready = waiting.popleft()
                if not waiting:
                    del queues[caller]
                if ready.done():  # its request was cancelled
                    continue
                ready.set_result(None)
                self._given += rows
                if self._given >= self.rows_per_turn:
                    break
        if queues or self._given:
            self._next_turn()


_pacers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pacer] = weakref.WeakKeyDictionary()


def pacer() -> Pacer:
    """The running event loop's pacer."""
    loop = asyncio.get_running_loop()
    found = _pacers.get(loop)
    if found is None:
        found = _pacers[loop] = Pacer()
    return found


__all__ = ["ROWS_PER_TURN", "YIELD_SECONDS", "Pacer", "pacer"]
