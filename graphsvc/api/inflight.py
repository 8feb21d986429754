"""What one API key, and one namespace, may have in flight at once: a budget of estimated cost.

The cost check (:mod:`graphsvc.api.cost`) bounds one operation; the per-key rate limit bounds how
many a key sends a second. Neither bounds what a key has *running*: sixteen operations just under
the cost limit, sent at once, each took its share of the event loop together, and every other
tenant waited for all of them (``/healthz`` stalled for seconds). Here every operation with a
caller holds its estimated cost from the moment it is admitted until it ends, against two pools:
its key's (``GRAPHSVC_MAX_COST_IN_FLIGHT_PER_KEY``, default ``GRAPHSVC_MAX_QUERY_COST``) and its
namespace's (``GRAPHSVC_MAX_COST_IN_FLIGHT_PER_NAMESPACE``, default twice that). An operation
that does not fit waits, first come first served, until enough of what is in flight ends; one
that still does not fit after :attr:`InFlight.wait` seconds is refused with ``LIMIT_EXCEEDED``.
So N heavy operations of one key run one budget at a time, costing that key N times its budget
in time, and other keys and namespaces nothing beyond one budget's share.

An operation alone in a pool always fits (the cost check already bounds it), so nothing waits
forever. While it runs, an operation's estimate is refined from the links it actually reads
(:meth:`Ticket.grow`), and the pools follow: a memory with far more links than the namespace's
average makes its operation hold more, and the next one wait longer. In memory, per process.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from graphsvc.errors import LimitExceededError


@dataclass
class _Waiter:
    cost: int
    ready: asyncio.Future[None]


@dataclass(eq=False)
class _Pool:
    """One key's or namespace's budget: the cost held by admitted operations, and the queue of
    those waiting for room in it (first come, first served)."""

    name: tuple[str, str]
    budget: int
    held: int = 0
    tickets: int = 0
    queue: deque[_Waiter] = field(default_factory=deque)

    def fits(self, cost: int) -> bool:
        """Whether ``cost`` fits beside what is held (an operation alone always fits)."""
        return self.tickets == 0 or self.held + cost <= self.budget

    def take(self, cost: int) -> None:
        self.held += cost
        self.tickets += 1

    def give_back(self, cost: int) -> None:
        self.held -= cost
        self.tickets -= 1

    def wake(self) -> None:
        """Admit the waiters at the head of the queue while they fit."""
        queue = self.queue
        while queue:
            waiter = queue[0]
            if waiter.ready.done():  # gave up meanwhile
                queue.popleft()
                continue
            if not self.fits(waiter.cost):
                return
            queue.popleft()
            self.take(waiter.cost)
            waiter.ready.set_result(None)


@dataclass
class Ticket:
    """An admitted operation's share of its pools; :meth:`release` it when the operation ends
    (idempotent)."""

    owner: InFlight
    cost: int
    pools: tuple[_Pool, ...]
    released: bool = False

    def grow(self, delta: int) -> None:
        """The operation's estimate changed by ``delta`` (negative: it shrank)."""
        if self.released or delta == 0:
            return
        delta = max(delta, -self.cost)
        self.cost += delta
        for pool in self.pools:
            pool.held += delta
            if delta < 0:
                pool.wake()

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        for pool in self.pools:
            pool.give_back(self.cost)
            pool.wake()
        self.owner.forget(self.pools)


class InFlight:
    """The cost in flight per API key and per namespace (see the module).

    Args:
        per_key: a key's budget (estimated fields); 0: no budget per key.
        per_namespace: a namespace's budget; 0: no budget per namespace.
        wait: most seconds an operation waits to be admitted before it is refused.
    """

    def __init__(self, per_key: int, per_namespace: int, wait: float) -> None:
        self.per_key = per_key
        self.per_namespace = per_namespace
        self.wait = wait
        self._pools: dict[tuple[str, str], _Pool] = {}

    def pools_of(self, key_id: str, namespace: str) -> tuple[_Pool, ...]:
        """The pools an operation of this key and namespace holds from, the key's first (made
        on first use)."""
        found = []
        for name, budget in (
            (("key", f"{namespace}\x1f{key_id}"), self.per_key),
            (("namespace", namespace), self.per_namespace),
        ):
            if budget <= 0:
                continue
            pool = self._pools.get(name)
            if pool is None:
                pool = self._pools[name] = _Pool(name, budget)
            found.append(pool)
        return tuple(found)

    def held(self, key_id: str, namespace: str) -> tuple[int, ...]:
        """The cost held now in this key's and namespace's pools (for messages and tests)."""
        return tuple(pool.held for pool in self.pools_of(key_id, namespace))

    async def admit(
        self, key_id: str, namespace: str, cost: int, wait: float | None = None
    ) -> Ticket:
        """Hold ``cost`` in the key's pool, then in the namespace's, waiting in each (first
        come, first served) until it fits: a key waiting for its own room never holds up the
        other keys of its namespace.

        Args:
            wait: most seconds to wait in all (default :attr:`wait`).

        Raises:
            LimitExceededError: it did not fit within the wait.
        """
        pools = self.pools_of(key_id, namespace)
        limit = self.wait if wait is None else wait
        deadline = asyncio.get_running_loop().time() + max(limit, 0.0)
        taken: list[_Pool] = []
        try:
            for pool in pools:
                await self._enter(pool, cost, deadline)
                taken.append(pool)
        except TimeoutError:
            self._undo(taken, cost, pools)
            held = ", ".join(f"{p.held} of {p.budget}" for p in pools)
            raise LimitExceededError(
                f"this API key's operations in flight hold an estimated {held} fields "
                f"(GRAPHSVC_MAX_COST_IN_FLIGHT_PER_KEY, ..._PER_NAMESPACE), and this one, "
                f"estimated at {cost}, waited {limit:g} s for room: send fewer costly "
                "operations at once (nested `links` cost the most), or retry when they end"
            ) from None
        except BaseException:
            self._undo(taken, cost, pools)
            raise
        return Ticket(self, cost, pools)

    @staticmethod
    async def _enter(pool: _Pool, cost: int, deadline: float) -> None:
        """Take ``cost`` in ``pool``, waiting in its queue until it fits or ``deadline``.

        Raises:
            TimeoutError: it did not fit by the deadline (it left the queue).
        """
        if not pool.queue and pool.fits(cost):
            pool.take(cost)
            return
        loop = asyncio.get_running_loop()
        waiter = _Waiter(cost, loop.create_future())
        pool.queue.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.ready), max(deadline - loop.time(), 0))
        except BaseException:
            if waiter.ready.done():  # admitted in the turn it gave up: give the share back
                pool.give_back(cost)
            else:
                waiter.ready.cancel()  # its place in the queue is skipped
            pool.wake()  # the ones behind it may fit now
            raise

    def _undo(self, taken: list[_Pool], cost: int, pools: tuple[_Pool, ...]) -> None:
        for pool in taken:
            pool.give_back(cost)
            pool.wake()
        self.forget(pools)

    def forget(self, pools: tuple[_Pool, ...]) -> None:
        """Drop pools that hold nothing and queue nothing (keys come and go)."""
        for pool in pools:
            if pool.tickets == 0 and not pool.queue and self._pools.get(pool.name) is pool:
                del self._pools[pool.name]


__all__ = ["InFlight", "Ticket"]
