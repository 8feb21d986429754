"""Arguments several domains share, and the batch-size check of the ``...Many`` mutations."""

from __future__ import annotations

from typing import Annotated

from graphsvc.api.types import arg
from graphsvc.errors import LimitExceededError

RunId = Annotated[str, arg("The run: 1-128 letters, digits, '_', '.', ':' or '-'.")]
OptionalRunId = Annotated[str | None, arg("Record a context event for this run.")]
Step = Annotated[int, arg("The agent's step number for the event.")]


def check_batch(count: int, what: str, limit: int) -> None:
    """Refuse a write of more than ``limit`` items before validating any of them.

    Raises:
        LimitExceededError: ``count`` is above ``limit`` (``GRAPHSVC_MAX_BATCH``).
    """
    if count > limit:
        raise LimitExceededError(
            f"{count} {what} in one write; the limit is {limit} (GRAPHSVC_MAX_BATCH): "
            "split the batch"
        )


__all__ = ["OptionalRunId", "RunId", "Step", "check_batch"]
