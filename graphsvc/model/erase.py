"""Removal: what forgetting one memory removed, and what an erase asks for and removed."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from graphsvc.model.base import InputModel, Model, UtcDateTime
from graphsvc.model.memory import LinkKind, Memory


class LinkRef(Model):
    """A removed link, as a forget receipt lists it."""

    source: UUID = Field(description="Id of the memory the link started at.")
    target: UUID = Field(description="Id of the memory the link pointed to.")
    kind: LinkKind = Field(description="The relationship type.")


class ForgetReceipt(Model):
    """What a forget removed."""

    memory_id: UUID = Field(description="The forgotten memory.")
    namespace: str = Field(description="Its namespace (the caller's).")
    removed_links: tuple[LinkRef, ...] = Field(description="Links removed with it.")
    removed_belief_ids: tuple[UUID, ...] = Field(
        description="Beliefs removed because they derived from or used it."
    )
    forgotten_at: datetime = Field(description="When it was forgotten.")


class EraseFilter(InputModel):
    """What an erase removes: the whole namespace (`everything`), or every memory matching all
    of the filters given (`tag`, `source`, and a time range [`since`, `until`) on occurredAt,
    recordedAt for memories without one)."""

    everything: bool = Field(
        default=False,
        description="The whole namespace: memories, links, beliefs, runs, context events and "
        "statistics. Not combined with the filters.",
    )
    tag: str | None = Field(default=None, description="Memories with this tag.")
    source: str | None = Field(default=None, description="Memories from this source.")
    since: UtcDateTime | None = Field(
        default=None, description="Memories at or after this time (occurredAt, else recordedAt)."
    )
    until: UtcDateTime | None = Field(
        default=None, description="Memories before this time (occurredAt, else recordedAt)."
    )

    @property
    def is_empty(self) -> bool:
        """True when it names nothing to erase."""
        return not self.everything and all(
            value is None for value in (self.tag, self.source, self.since, self.until)
        )

    def matches(self, memory: Memory) -> bool:
        """Whether an erase with this filter removes ``memory``."""
        if self.everything:
            return True
        when = memory.when
        return (
            (self.tag is None or self.tag in memory.tags)
            and (self.source is None or memory.source == self.source)
            and (self.since is None or when >= self.since)
            and (self.until is None or when < self.until)
        )


class EraseReceipt(Model):
    """What an erase removed (counts), and whether it finished."""

    namespace: str = Field(description="The namespace erased from (the caller's).")
    filter: EraseFilter = Field(description="What was asked to be erased, as given.")
    memories: int = Field(description="Memories removed.")
    links: int = Field(description="Links removed with them.")
    beliefs: int = Field(description="Beliefs removed because they derived from or used them.")
    events: int = Field(
        description="Context events: removed (everything), or rewritten to drop the ids of "
        "erased memories from their detail (a filtered erase)."
    )
    erased_at: datetime = Field(description="When the erase ran.")
    complete: bool = Field(
        description="True when nothing the filter names is left; false when the call stopped at "
        "its time budget (GRAPHSVC_ERASE_TIME_BUDGET): call erase again with the same input to "
        "finish (it resumes where this one stopped)."
    )

    def plus(self, other: EraseReceipt) -> EraseReceipt:
        """Two receipts of the same erase, added up (``other``'s time and completeness)."""
        return self.model_copy(
            update={
                "memories": self.memories + other.memories,
                "links": self.links + other.links,
                "beliefs": self.beliefs + other.beliefs,
                "events": self.events + other.events,
                "erased_at": other.erased_at,
                "complete": other.complete,
            }
        )
