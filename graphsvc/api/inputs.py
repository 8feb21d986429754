"""The GraphQL input types and their conversion to domain inputs.

Input types are derived from the domain models like the output types (:mod:`graphsvc.api.types`).
A resolver turns what it received into the domain input with :func:`to_domain` (strawberry's
derived classes keep no methods of their own): pydantic validates it, and its errors become
``BAD_INPUT`` naming the field under ``where`` (``input``, ``inputs.3``). A GraphQL ``null`` means
"the model's default", as leaving the field out does.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar
from uuid import UUID

import strawberry
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel
from strawberry.scalars import JSON

from graphsvc import model as m
from graphsvc import prompt as p
from graphsvc.api.types import AsOfMode, HistoryReuse, LinkKind, TranscriptRole, derived_input
from graphsvc.errors import BadInputError, validation_message

M = TypeVar("M", bound=BaseModel)


def to_domain(model: type[M], value: object, where: str, *, aliases: bool = False) -> M:
    """``value`` (a GraphQL input object, or the arguments of a field) validated as ``model``.

    Args:
        model: the domain input model.
        value: the input object strawberry built, or a dict of arguments by Python name.
        where: the path of the input in the operation, prefixed to every field in errors.
        aliases: name the fields in errors as GraphQL does (camelCase) rather than as Python does.

    Raises:
        BadInputError: pydantic refused the input; the message names each field and problem.
    """
    try:
        return model.model_validate(_plain(value, aliases))
    except ValidationError as exc:
        raise BadInputError(validation_message(exc, where)) from exc


def _plain(value: object, aliases: bool) -> Any:
    """Input objects (and dicts of arguments) as dicts without their null fields, enums as
    their values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            to_camel(f.name) if aliases else f.name: _plain(item, aliases)
            for f in dataclasses.fields(value)
            if (item := getattr(value, f.name)) is not None
        }
    if isinstance(value, dict):
        return {
            to_camel(key) if aliases else key: _plain(item, aliases)
            for key, item in value.items()
            if item is not None
        }
    if isinstance(value, list):
        return [_plain(item, aliases) for item in value]
    if isinstance(value, Enum):
        return value.value
    return value


# -- memories and links ---------------------------------------------------------------------------


@strawberry.input(description="A memory to write.")
class MemoryInput:
    # Explicit: GraphQL lists `id` last, the model first (a derived type keeps the model's order).
    text: str = strawberry.field(description="What to remember (not empty).")
    kind: str = strawberry.field(
        default="observation",
        description="Its kind: a letter, then up to 63 letters, digits or _ . : -",
    )
    occurred_at: datetime | None = strawberry.field(
        default=None, description="When it happened (naive times are UTC)."
    )
    tags: list[str] = strawberry.field(
        default_factory=list, description="Up to 32 tags of 1-64 characters."
    )
    source: str | None = strawberry.field(
        default=None, description="Where it came from (up to 512 characters)."
    )
    confidence: float = strawberry.field(default=1.0, description="Confidence in [0, 1].")
    valid_from: datetime | None = strawberry.field(
        default=None,
        description="When it became true (event time; a zone is required). Default: from "
        "occurredAt, else from when it is written.",
    )
    valid_until: datetime | None = strawberry.field(
        default=None,
        description="When it stopped being true (exclusive; after validFrom; a zone is "
        "required). A newer memory that SUPERSEDES it closes it at that memory's start.",
    )
    id: UUID | None = strawberry.field(
        default=None,
        description="Explicit id; by default one derived from the content. Rewriting an id with "
        "the same content is a no-op (retry-safe); with other content it is BAD_INPUT.",
    )


@derived_input(m.LinkInput)
class LinkInput:
    kind: LinkKind  # the GraphQL enum


@derived_input(m.EraseFilter)
class EraseInput:
    pass


# -- prompt assembly ------------------------------------------------------------------------------


@derived_input(p.FragmentInput)
class FragmentInput:
    pass


@derived_input(p.EnvironmentInput)
class EnvironmentInput:
    pass


@derived_input(p.ContextFileInput)
class ContextFileInput:
    pass


@strawberry.input(description=p.type_description(p.ToolInput))
class ToolInput:
    # Explicit: GraphQL's default of inputSchema is null (the model fills in {"type": "object"}),
    # a derived type would print the model's default.
    name: str = strawberry.field(description="1-64 letters, digits, '_' or '-'; unique.")
    description: str = strawberry.field(default="", description="What it does.")
    input_schema: JSON | None = strawberry.field(
        default=None, description='JSON Schema of its input (default {"type": "object"}).'
    )


@derived_input(p.SkillInput)
class SkillInput:
    pass


@derived_input(p.TranscriptEntryInput)
class TranscriptEntryInput:
    role: TranscriptRole  # the GraphQL enum


@derived_input(p.PromptInput)
class PromptInput:
    tool_catalog: list[ToolInput]  # the explicit ToolInput above
    history_reuse: HistoryReuse  # the GraphQL enum
    memory_as_of: datetime | None  # a DateTime (the model's AwareDatetime has no scalar)
    memory_as_of_mode: AsOfMode | None  # the GraphQL enum


__all__ = [
    "ContextFileInput",
    "EnvironmentInput",
    "EraseInput",
    "FragmentInput",
    "LinkInput",
    "MemoryInput",
    "PromptInput",
    "SkillInput",
    "ToolInput",
    "TranscriptEntryInput",
    "to_domain",
]
