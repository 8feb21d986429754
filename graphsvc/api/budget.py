"""What one GraphQL request may still do while it runs: rows to read and time to take.

The cost check (:mod:`graphsvc.api.cost`) refuses an operation whose estimate is too high before
it runs; an estimate can be wrong (one memory with far more links than the namespace's average),
so the nested resolvers also count the rows they hand to graphql-core here
(:meth:`RequestBudget.take`). Past ``GRAPHSVC_MAX_RESULT_ROWS`` rows, or past the request's
deadline (``GRAPHSVC_REQUEST_TIMEOUT``), the request stops: the failure is kept, the request's
task is cancelled (so graphql-core starts no more work for it), and every later call raises the
same error. The view answers the kept failure (:class:`graphsvc.api.app.GraphQLView`).

The deadline is checked here, on each resolver call, as well as by the view's timer: a request
that keeps the event loop busy delays the timer, never these checks.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from graphsvc.errors import GraphsvcError, LimitExceededError, StoreUnavailableError


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


__all__ = ["DeadlinePassedError", "RequestBudget", "deadline_message"]
