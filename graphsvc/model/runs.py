"""A run's trace: the context decisions graphsvc and agent harnesses record, step by step."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from graphsvc.model.base import Model


class ContextEventKind(StrEnum):
    """Kinds of context decisions graphsvc and agent harnesses record."""

    MEMORY_WRITE = "memory_write"
    MEMORY_RECALL = "memory_recall"
    MEMORY_EVICT = "memory_evict"
    ASSEMBLED = "assembled"
    REREAD = "reread"
    REREAD_REFUSED = "reread_refused"
    SERVED = "served"
    REPLAN = "replan"
    STALLED = "stalled"


class ContextEvent(Model):
    """One context decision of a run.

    Stored as ``(:Run)-[:HAD_EVENT]->(:ContextEvent)``.
    """

    run_id: str = Field(description="The run it belongs to.")
    seq: int = Field(description="Order of recording within the run, from 0.")
    step: int = Field(description="The agent's step number.")
    kind: ContextEventKind = Field(
        description="memory_write, memory_recall, memory_evict, assembled, ..."
    )
    detail: str | None = Field(default=None, description="What happened, in words.")
    est_tokens: int | None = Field(default=None, description="graphsvc's token estimate.")
    reported_tokens: int | None = Field(
        default=None, description="What the provider reported (recorded later), when known."
    )
    recorded_at: datetime = Field(description="When it was recorded.")
