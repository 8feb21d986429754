"""The budgets in flight per key and namespace (graphsvc.api.inflight) and the pacing of nested
graph rows per turn of the event loop (graphsvc.api.pacing)."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.api.inflight import InFlight
from graphsvc.api.pacing import Pacer
from graphsvc.errors import LimitExceededError


def test_a_key_waits_for_its_own_budget_and_others_do_not() -> None:
    async def main() -> None:
        pools = InFlight(per_key=100, per_namespace=150, wait=5.0)
        first = await pools.admit("k1", "ns", 80)
        waiting = asyncio.ensure_future(pools.admit("k1", "ns", 50))
        await asyncio.sleep(0.01)
        assert not waiting.done()  # 80 + 50 > 100
        other_key = await pools.admit("k2", "ns", 60)  # its own key; the namespace: 140 <= 150
        assert pools.held("k1", "ns") == (80, 140)
        other_namespace = await pools.admit("k3", "elsewhere", 100)
        first.release()
        second = await asyncio.wait_for(waiting, 1)
        assert pools.held("k1", "ns") == (50, 110)
        for ticket in (second, other_key, other_namespace):
            ticket.release()
        assert not pools._pools  # nothing held, nothing kept

    asyncio.run(main())


def test_an_operation_alone_always_fits_and_waiters_keep_their_order() -> None:
    async def main() -> None:
        pools = InFlight(per_key=10, per_namespace=0, wait=5.0)
        big = await pools.admit("k", "ns", 1_000)  # over the budget, but alone
        order: list[int] = []

        async def admit(number: int, cost: int) -> None:
            ticket = await pools.admit("k", "ns", cost)
            order.append(number)
            await asyncio.sleep(0.01)
            ticket.release()

        waiting = [asyncio.ensure_future(admit(n, c)) for n, c in enumerate((8, 1, 9, 1))]
        await asyncio.sleep(0.01)
        assert order == []
        big.release()
        await asyncio.gather(*waiting)
        # First come, first served: the small ones never overtake the one before them.
        assert order == [0, 1, 2, 3]

    asyncio.run(main())


def test_waiting_past_its_share_is_refused_and_leaves_the_queue() -> None:
    async def main() -> None:
        pools = InFlight(per_key=10, per_namespace=0, wait=5.0)
        held = await pools.admit("k", "ns", 9)
        with pytest.raises(LimitExceededError) as refused:
            await pools.admit("k", "ns", 5, wait=0.05)
        message = str(refused.value)
        assert "9 of 10" in message and "estimated at 5" in message
        assert "GRAPHSVC_MAX_COST_IN_FLIGHT_PER_KEY" in message and "waited 0.05 s" in message
        small = await asyncio.wait_for(pools.admit("k", "ns", 1), 1)  # not behind the refused
        cancelled = asyncio.ensure_future(pools.admit("k", "ns", 5))
        await asyncio.sleep(0.01)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        held.release()
        small.release()
        assert not pools._pools

    asyncio.run(main())


def test_a_grown_estimate_holds_more_and_a_shrunk_one_lets_waiters_in() -> None:
    async def main() -> None:
        pools = InFlight(per_key=100, per_namespace=0, wait=5.0)
        ticket = await pools.admit("k", "ns", 40)
        ticket.grow(50)  # links read: more than the estimate assumed
        assert pools.held("k", "ns") == (90,)
        waiting = asyncio.ensure_future(pools.admit("k", "ns", 30))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        ticket.grow(-30)  # fewer: 60 + 30 fits
        second = await asyncio.wait_for(waiting, 1)
        ticket.release()
        ticket.release()  # idempotent
        second.release()
        assert pools.held("k", "ns") == (0,)

    asyncio.run(main())


def test_the_pacer_hands_out_a_turns_rows_callers_in_turn() -> None:
    async def main() -> None:
        pacer = Pacer(rows_per_turn=10)
        turn = 0
        handed: list[tuple[int, str]] = []

        async def tick() -> None:
            nonlocal turn
            while True:
                await asyncio.sleep(0)
                turn += 1

        async def resolver(caller: str) -> None:
            await pacer.take(caller, 4)
            handed.append((turn, caller))

        ticker = asyncio.ensure_future(tick())
        await asyncio.sleep(0)
        # 30 resolvers of "a" answered at once (a loader batch), then 30 of "b".
        await asyncio.gather(*(resolver(c) for c in ["a"] * 30 + ["b"] * 30))
        ticker.cancel()
        per_turn: dict[int, list[str]] = {}
        for number, caller in handed:
            per_turn.setdefault(number, []).append(caller)
        # Never more than a turn's rows (and one resolver's past it) in one turn.
        assert max(4 * len(callers) for callers in per_turn.values()) <= 10 + 4
        assert len(per_turn) >= 60 * 4 // 14
        # While both wait, they take turns: "b" is not served after all of "a".
        first_b = min(number for number, caller in handed if caller == "b")
        last_a = max(number for number, caller in handed if caller == "a")
        assert first_b < last_a
        both = [c for c in per_turn.values() if "a" in c and "b" in c]
        assert both and all(abs(c.count("a") - c.count("b")) <= 1 for c in both[1:])

    asyncio.run(main())
