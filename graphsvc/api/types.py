"""The GraphQL output types and enums, derived from the domain models.

Each object type is ``strawberry.experimental.pydantic.type(Model, all_fields=True)`` of the model
it serves: fields, their order and their descriptions come from the model (``Field(description=
...)``), the type's description from the first paragraph of the model's docstring. Resolvers
return the domain objects themselves (strawberry reads their attributes; a derived type accepts an
instance of its model), so nothing is copied field by field.

A field is declared here only where the GraphQL shape differs from the model's, each with a comment
saying why: a GraphQL enum (its values carry descriptions), a ``JSON`` scalar, a field resolved
from the store (``Memory.links``). Types that have no model (pages, the viewer) are plain
strawberry types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum, StrEnum
from typing import Annotated, Any, TypeVar, cast
from uuid import UUID

import strawberry
from pydantic import BaseModel
from strawberry.experimental import pydantic as from_model
from strawberry.scalars import JSON
from strawberry.types.enum import EnumValueDefinition

from graphsvc import model as m
from graphsvc import overview as ov
from graphsvc import prompt as p
from graphsvc.api.context import Info
from graphsvc.api.fanout import read_links
from graphsvc.prompt import type_description

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)
E = TypeVar("E", bound=StrEnum)


# -- declaring fields, typed for mypy -------------------------------------------------------------


def resolver(description: str, graphql_type: object = None) -> Callable[[F], F]:
    """``@strawberry.field(description=..., graphql_type=...)``, typed for mypy (the decorated
    method becomes a StrawberryField that the class decorator collects; the cast only keeps the
    signature). ``graphql_type`` is the GraphQL type when the method returns domain objects."""
    return cast(
        "Callable[[F], F]", strawberry.field(description=description, graphql_type=graphql_type)
    )


def mutation(description: str, graphql_type: object = None) -> Callable[[F], F]:
    """``@strawberry.mutation(description=..., graphql_type=...)``, typed for mypy."""
    return cast(
        "Callable[[F], F]", strawberry.mutation(description=description, graphql_type=graphql_type)
    )


def arg(description: str) -> Any:
    """``strawberry.argument(description=...)``, for ``Annotated[type, arg("...")]``."""
    return strawberry.argument(description=description)


def derived(model: type[BaseModel], *, described: bool = True) -> Callable[[C], C]:
    """A GraphQL object type with every field of ``model``, described by its docstring
    (``described=False`` for a base class that is never in the schema by itself).

    The class body may only declare fields: strawberry builds a new class from it and keeps none
    of its methods (resolved fields go on a subclass, see :class:`Memory`)."""
    description = type_description(model) if described else None
    decorate = from_model.type(model, all_fields=True, description=description)
    return cast("Callable[[C], C]", decorate)


def derived_input(model: type[BaseModel]) -> Callable[[C], C]:
    """A GraphQL input type with every field of ``model``, described by its docstring."""
    decorate = from_model.input(model, all_fields=True, description=type_description(model))
    return cast("Callable[[C], C]", decorate)


def _value(member: E, descriptions: Mapping[E, str]) -> EnumValueDefinition:
    """A GraphQL enum value: the model member's value, described as the model describes it."""
    return strawberry.enum_value(member.value, description=descriptions[member])


# -- enums: explicit, because strawberry takes value descriptions only from enum_value members ----


@strawberry.enum(description=type_description(m.LinkKind))
class LinkKind(Enum):
    CAUSES = _value(m.LinkKind.CAUSES, m.LINK_KIND_DESCRIPTIONS)
    PRECEDES = _value(m.LinkKind.PRECEDES, m.LINK_KIND_DESCRIPTIONS)
    RELATES_TO = _value(m.LinkKind.RELATES_TO, m.LINK_KIND_DESCRIPTIONS)
    SUPERSEDES = _value(m.LinkKind.SUPERSEDES, m.LINK_KIND_DESCRIPTIONS)


@strawberry.enum(description=type_description(m.AsOfMode))
class AsOfMode(Enum):
    KNOWN = _value(m.AsOfMode.KNOWN, m.AS_OF_MODE_DESCRIPTIONS)
    VALID = _value(m.AsOfMode.VALID, m.AS_OF_MODE_DESCRIPTIONS)


@strawberry.enum(description=type_description(m.Validity))
class Validity(Enum):
    CURRENT = _value(m.Validity.CURRENT, m.VALIDITY_DESCRIPTIONS)
    SUPERSEDED = _value(m.Validity.SUPERSEDED, m.VALIDITY_DESCRIPTIONS)
    EXPIRED = _value(m.Validity.EXPIRED, m.VALIDITY_DESCRIPTIONS)
    NOT_YET = _value(m.Validity.NOT_YET, m.VALIDITY_DESCRIPTIONS)


@strawberry.enum(description=type_description(m.OrderReason))
class OrderReason(Enum):
    QUESTION_ASKS_ORDER = _value(m.OrderReason.QUESTION_ASKS_ORDER, m.ORDER_REASON_DESCRIPTIONS)
    EVIDENCE_SPANS_DAYS = _value(m.OrderReason.EVIDENCE_SPANS_DAYS, m.ORDER_REASON_DESCRIPTIONS)


@strawberry.enum(description=type_description(p.HistoryReuse))
class HistoryReuse(Enum):
    AVAILABLE = _value(p.HistoryReuse.AVAILABLE, p.ENUM_VALUE_DESCRIPTIONS)
    UNAVAILABLE = _value(p.HistoryReuse.UNAVAILABLE, p.ENUM_VALUE_DESCRIPTIONS)


@strawberry.enum(description=type_description(p.TranscriptRole))
class TranscriptRole(Enum):
    USER = _value(p.TranscriptRole.USER, p.ENUM_VALUE_DESCRIPTIONS)
    ASSISTANT = _value(p.TranscriptRole.ASSISTANT, p.ENUM_VALUE_DESCRIPTIONS)
    TOOL = _value(p.TranscriptRole.TOOL, p.ENUM_VALUE_DESCRIPTIONS)


@strawberry.enum(description=type_description(p.Visibility))
class Visibility(Enum):
    FULL = _value(p.Visibility.FULL, p.ENUM_VALUE_DESCRIPTIONS)
    TRUNCATED = _value(p.Visibility.TRUNCATED, p.ENUM_VALUE_DESCRIPTIONS)
    UNCHANGED = _value(p.Visibility.UNCHANGED, p.ENUM_VALUE_DESCRIPTIONS)
    DROPPED = _value(p.Visibility.DROPPED, p.ENUM_VALUE_DESCRIPTIONS)


# -- memories and links ---------------------------------------------------------------------------
# Strawberry lists a derived type's own fields before the model's, and the printed order is the
# contract: so the model's fields are a base class, and the resolved fields follow in a subclass.


@derived(m.Memory, described=False)
class MemoryFields:
    """The model's fields of :class:`Memory` (not in the schema by itself)."""


@derived(m.Link, described=False)
class LinkFields:
    """The model's fields of :class:`Link` (not in the schema by itself)."""

    kind: LinkKind  # the GraphQL enum


@strawberry.type(description=type_description(m.Memory))
class Memory(MemoryFields):
    @resolver(
        description="Every link touching this memory, sorted by (source, target, kind); "
        "`kind` keeps one kind only. Loaded in batches (one store call per batch).",
        graphql_type="list[Link]",
    )
    async def links(
        self,
        root: strawberry.Parent[m.Memory],
        info: Info,
        kind: Annotated[LinkKind | None, arg("Only links of this kind.")] = None,
    ) -> list[m.Link]:
        ctx = info.context
        # A request already stopped (its failure is what the view answers) does no more work
        # and makes no more errors: each costs graphql-core more than the field itself.
        if ctx.stopped:
            return []
        ctx.take_rows(0)  # a request past its budget or deadline starts no load
        found = await ctx.links_loader.load(root.id)
        links = [link for link in found if kind is None or link.kind.value == kind.name]
        await read_links(info._raw_info, ctx, root.id, links)
        if ctx.stopped:
            return []
        ctx.take_rows(len(links))
        await ctx.pace(len(links))
        return links

    @resolver(
        description="The fact's history: the memories joined to this one by SUPERSEDES links, "
        "either way (this one included), oldest first, each with its effective validity.",
        graphql_type="list[ValidityInterval]",
    )
    async def history(
        self, root: strawberry.Parent[m.Memory], info: Info
    ) -> list[m.ValidityInterval]:
        ctx = info.context
        ctx.take_rows(0)
        found = await ctx.run(ctx.service.history, ctx.namespace, root.id)
        ctx.take_rows(len(found))
        await ctx.pace(len(found))
        return found


@strawberry.type(description=type_description(m.Link))
class Link(LinkFields):
    @resolver(description="The source memory (batched).", graphql_type=Memory | None)
    async def source_memory(self, root: strawberry.Parent[m.Link], info: Info) -> m.Memory | None:
        return await _end_memory(info, root.source)

    @resolver(description="The target memory (batched).", graphql_type=Memory | None)
    async def target_memory(self, root: strawberry.Parent[m.Link], info: Info) -> m.Memory | None:
        return await _end_memory(info, root.target)


async def _end_memory(info: Info, memory: UUID) -> m.Memory | None:
    """A link's end, from the loader, counted and paced like every nested row (nothing when the
    request was stopped)."""
    ctx = info.context
    if ctx.stopped:
        return None
    ctx.take_rows(1)
    found = await ctx.memory_loader.load(memory)
    await ctx.pace(1)
    return found


@derived(m.ValidityInterval)
class ValidityInterval:
    memory: Memory  # Memory (with links), not its base MemoryFields


@derived(m.LinkRef)
class LinkRef:
    kind: LinkKind  # the GraphQL enum


@derived(m.ForgetReceipt)
class ForgetReceipt:
    pass


@derived(m.EraseFilter)
class EraseFilter:
    pass


@derived(m.EraseReceipt)
class EraseReceipt:
    pass


# -- recall ---------------------------------------------------------------------------------------


@derived(m.AsOf)
class AsOf:
    mode: AsOfMode  # the GraphQL enum


@derived(m.MemoryValidity)
class MemoryValidity:
    validity: Validity  # the GraphQL enum


@derived(m.ContextCapsule)
class ContextCapsule:
    validity: Validity  # the GraphQL enum


@derived(m.AnswerEvidence)
class AnswerEvidence:
    pass


@derived(m.ContextBundle)
class ContextBundle:
    order_reason: OrderReason | None  # the GraphQL enum


@derived(m.ReconstructedBelief)
class ReconstructedBelief:
    memories: list[Memory]  # Memory (with links), not its base MemoryFields


@derived(m.ContextEvent)
class ContextEvent:
    kind: str  # a String in the schema (the contract), an enum in the model


# -- prompt assembly (graphsvc.prompt) -------------------------------------------------------------


@derived(p.PromptFragment)
class PromptFragment:
    pass


@derived(p.PromptEnvironment)
class PromptEnvironment:
    pass


@derived(p.ContextFile)
class ContextFile:
    visibility: Visibility  # the GraphQL enum


@derived(p.Tool)
class Tool:
    input_schema: JSON  # a JSON object, which the model holds as a dict


@derived(p.Skill)
class Skill:
    pass


@derived(p.TranscriptEntry)
class TranscriptEntry:
    role: TranscriptRole  # the GraphQL enum
    visibility: Visibility  # the GraphQL enum


@derived(p.LedgerItem)
class LedgerItem:
    visibility: Visibility  # the GraphQL enum


@derived(p.ContextLedger)
class ContextLedger:
    pass


@derived(p.PromptBundle)
class PromptBundle:
    history_reuse: HistoryReuse  # the GraphQL enum
    messages: JSON  # a JSON object, which the model holds as a dict


@derived(p.DriftStep)
class DriftStep:
    pass


@derived(p.DriftReport)
class DriftReport:
    pass


# -- pages, stats and the caller -------------------------------------------------------------------


@strawberry.type(description="A position in a page of memories.")
class MemoryEdge:
    cursor: str = strawberry.field(description="Pass as `after` to get the memories after this.")
    node: m.Memory = strawberry.field(description="The memory.", graphql_type=Memory)


@strawberry.type(description="Where a page ends.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="True when more memories follow.")
    end_cursor: str | None = strawberry.field(
        description="Cursor of the last memory of the page (null for an empty page)."
    )


@strawberry.type(description="A page of memories, newest first (by recordedAt, then id).")
class MemoryConnection:
    edges: list[MemoryEdge] = strawberry.field(description="The memories with their cursors.")
    nodes: list[m.Memory] = strawberry.field(
        description="The memories of the page.", graphql_type=list[Memory]
    )
    page_info: PageInfo = strawberry.field(description="Whether and where the next page starts.")


@derived(m.NamespaceStats)
class NamespaceStats:
    pass


@derived(ov.FacetCount)
class FacetCount:
    pass


@derived(ov.Facet)
class Facet:
    pass


@derived(ov.CausalComponent)
class CausalComponent:
    pass


@derived(ov.Overview)
class Overview:
    pass


@strawberry.type(description="Who is calling: the API key's namespace and role.")
class Viewer:
    namespace: str = strawberry.field(description="The namespace every operation works in.")
    role: str = strawberry.field(description="read or write.")
    key_id: str = strawberry.field(
        description="Fingerprint of the API key (first 8 hex digits of its SHA-256)."
    )


__all__ = [
    "AnswerEvidence",
    "AsOf",
    "AsOfMode",
    "CausalComponent",
    "ContextBundle",
    "ContextCapsule",
    "ContextEvent",
    "ContextFile",
    "ContextLedger",
    "DriftReport",
    "DriftStep",
    "EraseFilter",
    "EraseReceipt",
    "Facet",
    "FacetCount",
    "ForgetReceipt",
    "HistoryReuse",
    "LedgerItem",
    "Link",
    "LinkKind",
    "LinkRef",
    "Memory",
    "MemoryConnection",
    "MemoryEdge",
    "MemoryValidity",
    "NamespaceStats",
    "OrderReason",
    "Overview",
    "PageInfo",
    "PromptBundle",
    "PromptEnvironment",
    "PromptFragment",
    "Skill",
    "Tool",
    "TranscriptEntry",
    "TranscriptRole",
    "Validity",
    "ValidityInterval",
    "Viewer",
    "Visibility",
    "arg",
    "derived",
    "derived_input",
    "mutation",
    "resolver",
]
