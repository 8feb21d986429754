"""What one GraphQL request may still do while it runs: rows to read, time to take, and its
estimated cost as the links it reads refine it.

The cost check (:mod:`graphsvc.api.cost`) refuses an operation whose estimate is too high before
it runs; an estimate can be wrong (one memory with far more links than the namespace's average),
so the nested resolvers also count the rows they hand to graphql-core here
(:meth:`RequestBudget.take`). Past ``GRAPHSVC_MAX_RESULT_ROWS`` rows, or past the request's
deadline (``GRAPHSVC_REQUEST_TIMEOUT``), the request stops: the failure is kept, the request's
task is cancelled (so graphql-core starts no more work for it), and every later call raises the
same error. The view answers the kept failure (:class:`graphsvc.api.view.GraphQLView`).

The deadline is checked here, on each resolver call, as well as by the view's timer: a request
that keeps the event loop busy delays the timer, never these checks.

The estimate (:class:`CostPlan`) assumed the namespace's average links per memory for every
``links``; a clique of ten memories hides in a sparse namespace's average. Each ``links`` read
replaces the assumption with the memory's real count: every link more than assumed adds the
cost of one link's selection below it (its nested ``links`` still at the average, until they
too are read). Past ``GRAPHSVC_MAX_QUERY_COST`` the request stops at once, at the first level
that shows the fan-out, instead of after reading ``GRAPHSVC_MAX_RESULT_ROWS`` rows.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from graphsvc.errors import GraphsvcError, LimitExceededError, StoreUnavailableError

if TYPE_CHECKING:
    from graphsvc.api.inflight import Ticket

#: Above this an estimate stops growing (the refusal says "over" it).
COST_CAP = 10**15


def deadline_message(timeout: float) -> str:
    """What a request that ran out of ``GRAPHSVC_REQUEST_TIMEOUT`` is told."""
    return (
        f"the request did not finish within {timeout:g} s (GRAPHSVC_REQUEST_TIMEOUT): the store "
        "is slow or unavailable, or the request asks for too much; retry after the Retry-After "
        "seconds, or ask for less (a write may still complete: writes are idempotent, so sending "
        "it again is safe)"
    )


class DeadlinePassedError(StoreUnavailableError):
    """The request ran out of ``GRAPHSVC_REQUEST_TIMEOUT`` (``code: UNAVAILABLE``)."""


@dataclass
class RequestBudget:
    """Rows and time left to one request.

    Args:
        max_rows: most rows the nested resolvers may hand out (``GRAPHSVC_MAX_RESULT_ROWS``).
        timeout: seconds the request may run (``GRAPHSVC_REQUEST_TIMEOUT``); ``None``: no bound.
        task: the request's task, cancelled when the budget runs out (``None``: nothing to
            cancel; the resolvers' errors stop the work).
    """

    max_rows: int
    timeout: float | None = None
    task: asyncio.Task[object] | None = None
    rows: int = 0
    failure: GraphsvcError | None = None
    deadline: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.timeout is not None:
            self.deadline = time.monotonic() + self.timeout

    def take(self, rows: int) -> None:
        """Count ``rows`` handed out, and check the deadline.

        Raises:
            LimitExceededError: the request has read more than ``max_rows`` rows.
            DeadlinePassedError: the request has run out of time.
        """
        if self.failure is not None:
            raise self.failure
        self.rows += rows
        if self.rows > self.max_rows:
            self._stop(
                LimitExceededError(
                    f"the request reads more than {self.max_rows} links and linked memories "
                    "through nested fields (GRAPHSVC_MAX_RESULT_ROWS): ask for fewer levels of "
                    "`links`, filter them by `kind`, or page with a smaller `first`"
                )
            )
        if self.deadline is not None and time.monotonic() >= self.deadline:
            assert self.timeout is not None
            self._stop(DeadlinePassedError(deadline_message(self.timeout)))

    def _stop(self, failure: GraphsvcError) -> None:
        self.failure = failure
        if self.task is not None:
            self.task.cancel()
        raise failure

    def fail(self, failure: GraphsvcError) -> None:
        """Stop the request with ``failure``, kept and raised, without cancelling its task:
        every later resolver raises it at its first check, and the view answers it alone.
        For a failure found before the request's fields fanned out (a refined estimate),
        where letting the few resolvers already started raise costs less than cancelling
        graphql-core's tasks, which leaves their resolvers' coroutines never awaited."""
        self.failure = failure
        raise failure


@dataclass
class CostPlan:
    """An admitted operation's estimated cost, refined as its ``links`` are read (see the
    module and :mod:`graphsvc.api.fanout`).

    Args:
        estimate: the estimate (fields), refined as links are read.
        limit: ``GRAPHSVC_MAX_QUERY_COST``.
        links_per_memory: what the estimate assumed for each ``links``.
        per_link: the cost of one link's selection under each ``Memory.links`` field node (by
            ``id`` of the node).
        ticket: the operation's share of its key's and namespace's budget in flight
            (:mod:`graphsvc.api.inflight`), grown and shrunk with the estimate.
    """

    estimate: int
    limit: int
    links_per_memory: int
    per_link: Mapping[int, int]
    ticket: Ticket | None = None
    #: ``links`` fields one level below each ``links`` field node (found on first read).
    ahead: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    #: (``links`` field node, memory) -> places whose count was taken one level ahead.
    prepaid: Counter[tuple[int, UUID]] = field(default_factory=Counter)
    #: Told the refusal's message when the refined estimate stops the operation (so the same
    #: operation sent again soon is refused before it runs).
    refused: Callable[[str], None] | None = None

    def prepay(self, node_id: int, memory: UUID) -> None:
        """The count of ``memory``'s ``links`` under the field node was taken one level ahead,
        for one place it appears: its own read then takes nothing."""
        self.prepaid[(node_id, memory)] += 1

    def read(self, node_id: int, memory: UUID, links: int) -> LimitExceededError | None:
        """A ``links`` field (its node's ``id``) of ``memory`` read ``links`` links: refine the
        estimate (unless its count was taken ahead). Returns the refusal when the estimate is
        now over the limit."""
        key = (node_id, memory)
        if self.prepaid[key] > 0:
            self.prepaid[key] -= 1
            return None
        below = self.per_link.get(node_id)
        if below is None:
            return None
        return self.grow((links - self.links_per_memory) * below, links)

    def grow(self, delta: int, links: int) -> LimitExceededError | None:
        """Add ``delta`` to the estimate (``links``: the largest count read, for the message).
        Returns the refusal when the estimate is now over the limit."""
        if delta == 0:
            return None
        self.estimate = max(0, min(self.estimate + delta, COST_CAP))
        if self.ticket is not None:
            self.ticket.grow(delta)
        if self.estimate <= self.limit:
            return None
        value = f"over {COST_CAP}" if self.estimate >= COST_CAP else f"about {self.estimate}"
        message = (
            f"the operation would resolve {value} fields, counting the links of the memories "
            f"read so far (one has {links} links where the estimate assumed "
            f"{self.links_per_memory}, this namespace's links per memory); the limit is "
            f"{self.limit} (GRAPHSVC_MAX_QUERY_COST): ask for fewer nested `links`, filter them "
            "by `kind`, fewer aliased copies, or split the request"
        )
        if self.refused is not None:
            self.refused(message)
            self.refused = None
        return LimitExceededError(message)


__all__ = ["COST_CAP", "CostPlan", "DeadlinePassedError", "RequestBudget", "deadline_message"]
