"""What the tools answer: the results GraphQL returns as lists or connections, the JSON of any
result (:func:`to_json`, without a memory's stemmed ``terms``), and the text lines of a memory."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field

from graphsvc.model import Link, Memory, Model, ReconstructedBelief
from graphsvc.validity import moment_text

_SHORT = 100  # characters of a memory's text in a text rendering


# -- results that GraphQL returns as lists or connections ---------------------------------------


class RememberManyResult(Model):
    """The memories as stored, in input order."""

    memories: tuple[Memory, ...] = Field(description="The memories as stored, in input order.")


class GetMemoryResult(Model):
    """The memories found, the links touching them, and the ids not found."""

    memories: tuple[Memory, ...] = Field(
        description="The memories found, in the order asked (each id once)."
    )
    links: tuple[Link, ...] = Field(description="Every link touching a memory found.")
    not_found: tuple[UUID, ...] = Field(
        description="Ids asked for that your namespace has no memory with (never written, "
        "forgotten, or another namespace's)."
    )


class PageInfo(Model):
    """Where a page ends."""

    has_next_page: bool
    end_cursor: str | None


class MemoryConnection(Model):
    """A page of memories, newest first (by recordedAt, then id)."""

    nodes: tuple[Memory, ...]
    page_info: PageInfo


# -- their JSON -----------------------------------------------------------------------------------

#: Memory fields the tools leave out: ``terms`` is the stemmed text graphsvc indexes, noise in an
#: agent's context (GraphQL's Memory keeps the field, for compatibility).
HIDDEN_MEMORY_FIELDS = frozenset({"terms"})


def to_json(result: BaseModel) -> dict[str, Any]:
    """A tool result's JSON (camelCase, as ``Model.to_json_dict``) without
    :data:`HIDDEN_MEMORY_FIELDS`, wherever the result holds memories."""
    hidden = set(HIDDEN_MEMORY_FIELDS)
    exclude: Any = None
    if isinstance(result, Memory):
        exclude = hidden
    elif isinstance(result, MemoryConnection):
        exclude = {"nodes": {"__all__": hidden}}
    elif isinstance(result, RememberManyResult | GetMemoryResult | ReconstructedBelief):
        exclude = {"memories": {"__all__": hidden}}
    data: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude=exclude)
    return data


def hide_memory_fields(schema: dict[str, Any]) -> None:
    """Drop :data:`HIDDEN_MEMORY_FIELDS` from the Memory object(s) of a JSON schema."""
    for definition in (schema, *schema.get("$defs", {}).values()):
        if definition.get("title") != Memory.__name__:
            continue
        for name in HIDDEN_MEMORY_FIELDS:
            definition.get("properties", {}).pop(name, None)
            if name in definition.get("required", []):
                definition["required"].remove(name)


# -- a memory as text -----------------------------------------------------------------------------


def short(text: str, width: int = _SHORT) -> str:
    """A text on one line, cut to ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _day(memory: Memory) -> str:
    """A memory's date as the texts show it (``occurredAt``, else ``validFrom``), and when it
    stops being true when it does."""
    dated = memory.dated_at
    day = dated.date().isoformat() if dated else "undated"
    if memory.invalidated_at is not None:
        day += f", until {moment_text(memory.invalidated_at)}"
    return day


def memory_line(memory: Memory) -> str:
    """One memory on one line: id, day (and end), kind and text."""
    return f"- {memory.id} [{_day(memory)}] {memory.kind}: {short(memory.text)}"


def full_memory_line(memory: Memory) -> str:
    """One memory with its whole text: id, day (and end), kind, tags and text."""
    tags = f" #{' #'.join(memory.tags)}" if memory.tags else ""
    return f"- {memory.id} [{_day(memory)}] {memory.kind}{tags}: {memory.text}"


__all__ = [
    "HIDDEN_MEMORY_FIELDS",
    "GetMemoryResult",
    "MemoryConnection",
    "PageInfo",
    "RememberManyResult",
    "full_memory_line",
    "hide_memory_fields",
    "memory_line",
    "short",
    "to_json",
]
