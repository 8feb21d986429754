"""The GraphQL schema (strawberry, code-first): DESIGN.md's contract and what a frontend needs.

Every resolver works in the caller's namespace, taken from the request context's
:class:`~graphsvc.api.auth.Principal` (never from an argument), and calls
:class:`~graphsvc.service.MemoryService`, which validates input and enforces the limits of the
settings. The service and the stores are synchronous: resolvers are ``async`` and hand each call to
a worker thread (:meth:`RequestContext.run`), so the event loop never waits on a store. Strawberry
itself calls a sync resolver on the event loop, not in a thread pool.

Errors: a :class:`~graphsvc.errors.GraphsvcError` reaches the client with its message and
``extensions.code``; parse, validation and limit errors get ``BAD_INPUT`` or ``LIMIT_EXCEEDED``;
anything else is masked as ``Unexpected error; request id X`` (``code: INTERNAL``) and logged with
its traceback and the request id (:class:`ErrorPolicy`, :meth:`GraphsvcSchema.process_errors`).

``schema`` below is built with the default limits; ``schema.graphql`` at the repository root is
its printed form (``python -m graphsvc.api.export``), and a test fails when the file is stale.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as dt
import functools
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Annotated, Any, TypeVar, cast
from uuid import UUID

import anyio.to_thread
import strawberry
from anyio import CapacityLimiter
from graphql import GraphQLError
from pydantic import ValidationError
from strawberry.dataloader import DataLoader
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)
from strawberry.scalars import JSON
from strawberry.types import ExecutionContext

from graphsvc import model as m
from graphsvc import prompt as p
from graphsvc.api.auth import Principal, UnauthenticatedError
from graphsvc.errors import BadInputError, GraphsvcError, LimitExceededError, validation_message
from graphsvc.service import MemoryService

T = TypeVar("T")

logger = logging.getLogger("graphsvc.api")

# Codes a client may see on a graphsvc error; any other (INTERNAL) is masked like a crash.
PUBLIC_CODES = frozenset(
    {"BAD_INPUT", "NOT_FOUND", "LIMIT_EXCEEDED", "UNAVAILABLE", "UNAUTHENTICATED", "FORBIDDEN"}
)
MASKED_CODE = "INTERNAL"
LINKS_BATCH = 500  # most memory ids in one links_of call of the DataLoader


@dataclass(frozen=True)
class Limits:
    """Limits of the GraphQL layer (the service enforces batch sizes, budgets, k and depth)."""

    max_depth: int = 10
    max_tokens: int = 2_000
    max_aliases: int = 15
    default_page_size: int = 20
    max_page_size: int = 100
    document_cache: int = 256  # parsed and validated documents kept (LRU, per process)


def new_request_id() -> str:
    """A fresh request id: 32 hex digits."""
    return uuid.uuid4().hex


@dataclass
class RequestContext:
    """What every resolver of one request sees.

    Args:
        service: the service on the opened store.
        principal: the authenticated caller; ``None`` only for requests that run no resolver
            (the GraphiQL page), and a resolver then refuses with UNAUTHENTICATED.
        request_id: the id logged and returned in ``X-Request-Id``.
        limits: page sizes and other GraphQL-layer limits.
        limiter: bounds the worker threads store calls run in (``None``: anyio's default).
        log: fields the access log line adds (operation name and type, error codes).
    """

    service: MemoryService
    principal: Principal | None
    request_id: str = field(default_factory=new_request_id)
    limits: Limits = field(default_factory=Limits)
    limiter: CapacityLimiter | None = None
    log: dict[str, Any] = field(default_factory=dict)
    _links: DataLoader[UUID, list[m.Link]] | None = field(default=None, init=False, repr=False)
    _memories: DataLoader[UUID, m.Memory | None] | None = field(
        default=None, init=False, repr=False
    )

    @property
    def namespace(self) -> str:
        """The caller's namespace."""
        return self.caller.namespace

    @property
    def caller(self) -> Principal:
        if self.principal is None:
            raise UnauthenticatedError("no API key: send the header 'Authorization: Bearer <key>'")
        return self.principal

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Call a synchronous service or store function in a worker thread."""
        call = functools.partial(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self.limiter)

    @property
    def links_loader(self) -> DataLoader[UUID, list[m.Link]]:
        """Links touching a memory, batched: one ``links_of`` call per batch of memory ids."""
        if self._links is None:
            self._links = DataLoader(self._load_links, max_batch_size=LINKS_BATCH)
        return self._links

    @property
    def memory_loader(self) -> DataLoader[UUID, m.Memory | None]:
        """Memories by id, batched: one ``get_memories`` call per batch."""
        if self._memories is None:
            self._memories = DataLoader(self._load_memories, max_batch_size=LINKS_BATCH)
        return self._memories

    async def _load_links(self, ids: list[UUID]) -> list[list[m.Link]]:
        found = await self.run(self.service.links_of, self.namespace, ids)
        by_id: dict[UUID, list[m.Link]] = {i: [] for i in ids}
        for link in found:
            for end in {link.source, link.target}:
                if end in by_id:
                    by_id[end].append(link)
        return [by_id[i] for i in ids]

    async def _load_memories(self, ids: list[UUID]) -> list[m.Memory | None]:
        found = await self.run(self.service.get_memories, self.namespace, ids)
        by_id = {memory.id: memory for memory in found}
        return [by_id.get(i) for i in ids]


Info = strawberry.Info[RequestContext, None]


PageKey = tuple[datetime, str]


def encode_cursor(memory: m.Memory) -> str:
    """An opaque cursor for a memory's position in the newest-first order."""
    raw = json.dumps([memory.recorded_at.isoformat(), str(memory.id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> PageKey:
    """The position a cursor stands for; BadInputError when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        recorded, memory_id = json.loads(raw)
        return m.as_utc(datetime.fromisoformat(recorded)), str(UUID(memory_id))
    except (ValueError, TypeError, binascii.Error):
        raise BadInputError(
            f"invalid cursor {cursor[:80]!r}: pass the endCursor of a previous page"
        ) from None


# -- types ----------------------------------------------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])


def _resolver(description: str) -> Callable[[F], F]:
    """``@strawberry.field(description=...)``, typed for mypy (the decorated method becomes a
    StrawberryField that the class decorator collects; the cast only keeps the signature)."""
    return cast("Callable[[F], F]", strawberry.field(description=description))


def _arg(description: str) -> Any:
    return strawberry.argument(description=description)


Cue = Annotated[str, _arg("What to reconstruct a belief about, in words.")]
TopK = Annotated[int | None, _arg("How many direct hits (default 5).")]
Depth = Annotated[int | None, _arg("Walk depth in hops (default 2).")]
RunId = Annotated[str, _arg("The run: 1-128 letters, digits, '_', '.', ':' or '-'.")]
OptionalRunId = Annotated[str | None, _arg("Record a context event for this run.")]
Step = Annotated[int, _arg("The agent's step number for the event.")]


def _mutation(description: str) -> Callable[[F], F]:
    """``@strawberry.mutation(description=...)``, typed for mypy."""
    return cast("Callable[[F], F]", strawberry.mutation(description=description))


@strawberry.enum(description="How two memories are related.")
class LinkKind(Enum):
    CAUSES = strawberry.enum_value("CAUSES", description="The source caused the target.")
    PRECEDES = strawberry.enum_value("PRECEDES", description="The source happened before.")
    RELATES_TO = strawberry.enum_value("RELATES_TO", description="An association.")
    SUPERSEDES = strawberry.enum_value(
        "SUPERSEDES", description="The source (newer) updates the target (older)."
    )


def _kind_out(kind: m.LinkKind) -> LinkKind:
    return LinkKind[kind.value]


@strawberry.type(description="A stored memory (a :Memory node) of the caller's namespace.")
class Memory:
    id: UUID = strawberry.field(description="Unique id (UUID).")
    namespace: str = strawberry.field(description="The namespace it belongs to (the caller's).")
    text: str = strawberry.field(description="What is remembered.")
    kind: str = strawberry.field(description="Its kind: observation, event, decision, fact, ...")
    occurred_at: datetime | None = strawberry.field(
        description="When the thing happened, when known."
    )
    recorded_at: datetime = strawberry.field(description="When it was written.")
    invalidated_at: datetime | None = strawberry.field(
        description="When it stopped being true, if it did."
    )
    tags: list[str] = strawberry.field(description="Tags, in the order written.")
    source: str | None = strawberry.field(description="Where it came from.")
    confidence: float = strawberry.field(description="Stored confidence, in [0, 1].")
    tokens: int = strawberry.field(description="Estimated tokens of the text.")
    terms: list[str] = strawberry.field(description="The analysed text (repeats kept).")

    @_resolver(
        description="Every link touching this memory, sorted by (source, target, kind); "
        "`kind` keeps one kind only. Loaded in batches (one store call per batch)."
    )
    async def links(
        self, info: Info, kind: Annotated[LinkKind | None, _arg("Only links of this kind.")] = None
    ) -> list[Link]:
        found = await info.context.links_loader.load(self.id)
        return [Link.of(lk) for lk in found if kind is None or lk.kind.value == kind.name]

    @classmethod
    def of(cls, memory: m.Memory) -> Memory:
        return cls(
            id=memory.id,
            namespace=memory.namespace,
            text=memory.text,
            kind=memory.kind,
            occurred_at=memory.occurred_at,
            recorded_at=memory.recorded_at,
            invalidated_at=memory.invalidated_at,
            tags=list(memory.tags),
            source=memory.source,
            confidence=memory.confidence,
            tokens=memory.tokens,
            terms=list(memory.terms),
        )


@strawberry.type(description="A relationship between two memories of one namespace.")
class Link:
    source: UUID = strawberry.field(description="Id of the memory the link starts at.")
    target: UUID = strawberry.field(description="Id of the memory the link points to.")
    kind: LinkKind = strawberry.field(description="The relationship type.")
    weight: float = strawberry.field(description="Strength of the relationship.")
    created_at: datetime = strawberry.field(description="When the link was written.")
    note: str | None = strawberry.field(description="Free text about the link.")

    @_resolver(description="The source memory (batched).")
    async def source_memory(self, info: Info) -> Memory | None:
        found = await info.context.memory_loader.load(self.source)
        return None if found is None else Memory.of(found)

    @_resolver(description="The target memory (batched).")
    async def target_memory(self, info: Info) -> Memory | None:
        found = await info.context.memory_loader.load(self.target)
        return None if found is None else Memory.of(found)

    @classmethod
    def of(cls, link: m.Link) -> Link:
        return cls(
            source=link.source,
            target=link.target,
            kind=_kind_out(link.kind),
            weight=link.weight,
            created_at=link.created_at,
            note=link.note,
        )


@strawberry.type(description="A removed link, as a forget receipt lists it.")
class LinkRef:
    source: UUID = strawberry.field(description="Id of the memory the link started at.")
    target: UUID = strawberry.field(description="Id of the memory the link pointed to.")
    kind: LinkKind = strawberry.field(description="The relationship type.")


@strawberry.type(description="What a forget removed.")
class ForgetReceipt:
    memory_id: UUID = strawberry.field(description="The forgotten memory.")
    namespace: str = strawberry.field(description="Its namespace (the caller's).")
    removed_links: list[LinkRef] = strawberry.field(description="Links removed with it.")
    removed_belief_ids: list[UUID] = strawberry.field(
        description="Beliefs removed because they derived from or used it."
    )
    forgotten_at: datetime = strawberry.field(description="When it was forgotten.")

    @classmethod
    def of(cls, receipt: m.ForgetReceipt) -> ForgetReceipt:
        return cls(
            memory_id=receipt.memory_id,
            namespace=receipt.namespace,
            removed_links=[
                LinkRef(source=r.source, target=r.target, kind=_kind_out(r.kind))
                for r in receipt.removed_links
            ],
            removed_belief_ids=list(receipt.removed_belief_ids),
            forgotten_at=receipt.forgotten_at,
        )


@strawberry.type(description="One memory as offered to a prompt, or as excluded from it.")
class ContextCapsule:
    memory_id: UUID = strawberry.field(description="The memory.")
    text: str = strawberry.field(
        description="Its text as rendered (date-prefixed when the bundle is chronological)."
    )
    kind: str = strawberry.field(description="The memory's kind.")
    score: float = strawberry.field(description="Composite score in [0, 1].")
    tokens: int = strawberry.field(description="Estimated tokens of `text`.")
    occurred_at: datetime | None = strawberry.field(description="When it happened, when known.")
    matched_terms: list[str] = strawberry.field(description="Query terms the memory contains.")
    reason: str | None = strawberry.field(
        description="'match' for a packed capsule; for an excluded one why: abstained, "
        "duplicate, budget, max_capsules or below_floor."
    )

    @classmethod
    def of(cls, capsule: m.ContextCapsule) -> ContextCapsule:
        return cls(
            memory_id=capsule.memory_id,
            text=capsule.text,
            kind=capsule.kind,
            score=capsule.score,
            tokens=capsule.tokens,
            occurred_at=capsule.occurred_at,
            matched_terms=list(capsule.matched_terms),
            reason=capsule.reason,
        )


@strawberry.type(
    description="What memory offers a prompt under a token budget, and what it does not cover."
)
class ContextBundle:
    query: str = strawberry.field(description="The question asked.")
    stage: str = strawberry.field(description="The scoring stage used.")
    budget_tokens: int = strawberry.field(description="The token budget.")
    min_score: float = strawberry.field(description="Abstention threshold on topScore.")
    used_tokens: int = strawberry.field(description="Tokens of the packed capsules.")
    capsules: list[ContextCapsule] = strawberry.field(description="Packed capsules.")
    excluded: list[ContextCapsule] = strawberry.field(
        description="Ranked candidates left out, each with its reason."
    )
    skipped: bool = strawberry.field(
        description="True when topScore is below minScore: memory abstains."
    )
    top_score: float = strawberry.field(description="Best composite score before any cut.")
    evidence_coverage: float = strawberry.field(
        description="IDF-weighted share of the discriminating query terms the capsules cover."
    )
    uncovered_terms: list[str] = strawberry.field(
        description="Discriminating query terms no capsule mentions, highest IDF first."
    )
    chronological: bool = strawberry.field(
        description="True when the question asks about order: capsules are oldest first."
    )
    rendered: str = strawberry.field(description="The capsules as text for a prompt.")

    @classmethod
    def of(cls, bundle: m.ContextBundle) -> ContextBundle:
        return cls(
            query=bundle.query,
            stage=bundle.stage,
            budget_tokens=bundle.budget_tokens,
            min_score=bundle.min_score,
            used_tokens=bundle.used_tokens,
            capsules=[ContextCapsule.of(c) for c in bundle.capsules],
            excluded=[ContextCapsule.of(c) for c in bundle.excluded],
            skipped=bundle.skipped,
            top_score=bundle.top_score,
            evidence_coverage=bundle.evidence_coverage,
            uncovered_terms=list(bundle.uncovered_terms),
            chronological=bundle.chronological,
            rendered=bundle.rendered,
        )


@strawberry.type(
    description="The top hits for a cue plus the graph context around them, summarised by rules."
)
class ReconstructedBelief:
    cue: str = strawberry.field(description="The cue asked about.")
    summary: str = strawberry.field(
        description="Deterministic text: the cue, direct evidence, causal chains, linked context."
    )
    source_ids: list[UUID] = strawberry.field(description="Direct hits, in rank order.")
    linked_context_ids: list[UUID] = strawberry.field(
        description="Memories the graph walk added (never a source)."
    )
    confidence: float = strawberry.field(description="Mean score of the sources, in [0, 1].")
    memories: list[Memory] = strawberry.field(description="The sources, then the linked context.")
    belief_id: UUID | None = strawberry.field(
        description="Id of the stored :Belief (the mutation, when there were sources); else null."
    )

    @classmethod
    def of(cls, belief: m.ReconstructedBelief) -> ReconstructedBelief:
        return cls(
            cue=belief.cue,
            summary=belief.summary,
            source_ids=list(belief.source_ids),
            linked_context_ids=list(belief.linked_context_ids),
            confidence=belief.confidence,
            memories=[Memory.of(mem) for mem in belief.memories],
            belief_id=belief.belief_id,
        )


@strawberry.type(description="One context decision of a run.")
class ContextEvent:
    run_id: str = strawberry.field(description="The run it belongs to.")
    seq: int = strawberry.field(description="Order of recording within the run, from 0.")
    step: int = strawberry.field(description="The agent's step number.")
    kind: str = strawberry.field(
        description="memory_write, memory_recall, memory_evict, assembled, ..."
    )
    detail: str | None = strawberry.field(description="What happened, in words.")
    est_tokens: int | None = strawberry.field(description="graphsvc's token estimate.")
    reported_tokens: int | None = strawberry.field(
        description="What the provider reported (recorded later), when known."
    )
    recorded_at: datetime = strawberry.field(description="When it was recorded.")

    @classmethod
    def of(cls, event: m.ContextEvent) -> ContextEvent:
        return cls(
            run_id=event.run_id,
            seq=event.seq,
            step=event.step,
            kind=event.kind.value,
            detail=event.detail,
            est_tokens=event.est_tokens,
            reported_tokens=event.reported_tokens,
            recorded_at=event.recorded_at,
        )


# -- prompt assembly (graphsvc.prompt) -------------------------------------------------------------


@strawberry.enum(description="Whether the caller's provider keeps the conversation history.")
class HistoryReuse(Enum):
    AVAILABLE = strawberry.enum_value(
        "AVAILABLE",
        description="The provider caches the history: context files whose sha256 is in "
        "prevContextHash(es) are sent as an 'unchanged' marker instead of their text.",
    )
    UNAVAILABLE = strawberry.enum_value(
        "UNAVAILABLE", description="Every context file is sent in full (the default)."
    )


@strawberry.enum(description="Who produced a transcript entry.")
class TranscriptRole(Enum):
    USER = strawberry.enum_value("USER", description="The user.")
    ASSISTANT = strawberry.enum_value("ASSISTANT", description="The model.")
    TOOL = strawberry.enum_value("TOOL", description="A tool's result (sent as user text).")


@strawberry.enum(description="How much of an item the model sees.")
class Visibility(Enum):
    FULL = strawberry.enum_value("FULL", description="The whole text is in the prompt.")
    TRUNCATED = strawberry.enum_value(
        "TRUNCATED", description="The text is cut at the size cap (maxContextFileTokens)."
    )
    UNCHANGED = strawberry.enum_value(
        "UNCHANGED",
        description="Only an 'unchanged, text omitted' marker: the provider has the text "
        "from the cached history.",
    )
    DROPPED = strawberry.enum_value("DROPPED", description="Left out to fit the context window.")


@strawberry.type(description="A prompt fragment as carried, in the caller's order.")
class PromptFragment:
    name: str = strawberry.field(description="The caller's label.")
    text: str = strawberry.field(description="The text.")
    tokens: int = strawberry.field(description="Estimated tokens of its block in the prompt.")


@strawberry.type(description="Where the agent runs, as rendered into the system prompt.")
class PromptEnvironment:
    cwd: str | None = strawberry.field(description="Working directory, when sent.")
    model: str | None = strawberry.field(description="Model name, when sent.")
    search_mode: str | None = strawberry.field(description="Search mode, when sent.")
    date: dt.date = strawberry.field(
        description="The day (never a time, so the prompt stays cache-stable within a day): "
        "the caller's, else the server's UTC day."
    )


@strawberry.type(description="A project context file as carried.")
class ContextFile:
    path: str = strawberry.field(description="The caller's path.")
    scope: str = strawberry.field(description="Where it applies (the caller's label).")
    content: str = strawberry.field(
        description="The text carried: the caller's, cut at the size cap when `truncated`. "
        "For an UNCHANGED file it is omitted from `rendered` and `messages`."
    )
    content_hash: str = strawberry.field(
        description="sha256 of the caller's full content (UTF-8), 64 hex digits: pass it as "
        "prevContextHash next turn when the provider keeps the history."
    )
    truncated: bool = strawberry.field(description="True when the text was cut at the cap.")
    visibility: Visibility = strawberry.field(description="FULL, TRUNCATED or UNCHANGED.")
    tokens: int = strawberry.field(description="Estimated tokens of its block in the prompt.")
    original_tokens: int = strawberry.field(
        description="Estimated tokens of the caller's full content."
    )


@strawberry.type(description="A tool, as declared to the provider (in `messages.tools`).")
class Tool:
    name: str = strawberry.field(description="The tool's name.")
    description: str = strawberry.field(description="What it does (may be empty).")
    input_schema: JSON = strawberry.field(description="JSON Schema of its input.")
    tokens: int = strawberry.field(description="Estimated tokens of its definition (JSON).")


@strawberry.type(description="A skill's metadata (never its body).")
class Skill:
    name: str = strawberry.field(description="The skill's name.")
    description: str = strawberry.field(description="When to use it (may be empty).")
    path: str | None = strawberry.field(description="Where its body is, when sent.")
    tokens: int = strawberry.field(description="Estimated tokens of its line in the prompt.")


@strawberry.type(description="One of the last transcript entries.")
class TranscriptEntry:
    index: int = strawberry.field(description="Position in the caller's transcript, from 0.")
    role: TranscriptRole = strawberry.field(description="Who produced it.")
    text: str = strawberry.field(description="The caller's text.")
    tool_name: str | None = strawberry.field(description="The tool, for a tool result.")
    tokens: int = strawberry.field(description="Estimated tokens of its text block.")
    visibility: Visibility = strawberry.field(
        description="FULL, or DROPPED when left out to fit the window."
    )


@strawberry.type(description="One item of the prompt and what it costs.")
class LedgerItem:
    section: str = strawberry.field(
        description="fragments, environment, project_context, skills, memory, tools, "
        "transcript or user_turn."
    )
    name: str = strawberry.field(
        description="The fragment name, file path, skill or tool name, memory id, "
        "'<role> #<index>' for a transcript entry, or the part's name."
    )
    tokens: int = strawberry.field(
        description="Estimated tokens (for a DROPPED item: what it would have cost)."
    )
    visibility: Visibility = strawberry.field(description="How much of it the model sees.")


@strawberry.type(
    description="Where the context window goes: every count is graphsvc's estimate and never "
    "negative; estimatedInputTokens = systemTokens + messageTokens + toolTokens."
)
class ContextLedger:
    context_window: int = strawberry.field(description="Tokens the model reads and writes.")
    reserved_completion_tokens: int = strawberry.field(description="Kept free for the answer.")
    available_input_tokens: int = strawberry.field(
        description="contextWindow - reservedCompletionTokens."
    )
    estimated_input_tokens: int = strawberry.field(
        description="Estimated tokens of the prompt (the assembled event's estTokens)."
    )
    remaining_tokens: int = strawberry.field(
        description="availableInputTokens - estimatedInputTokens, or 0 when it does not fit."
    )
    overflow_tokens: int = strawberry.field(
        description="How far the estimate is over the available input (0 when it fits)."
    )
    fits: bool = strawberry.field(description="True when the estimate is within the input.")
    system_tokens: int = strawberry.field(description="Estimated tokens of `rendered`.")
    message_tokens: int = strawberry.field(description="Of the messages' text blocks.")
    tool_tokens: int = strawberry.field(description="Of the tool definitions (JSON).")
    memory_budget_tokens: int = strawberry.field(
        description="The memory section's budget: min(memoryBudgetShare * available input, "
        "maxMemoryTokens, what the rest leaves); 0 when memory was not consulted."
    )
    memory_tokens: int = strawberry.field(
        description="Estimated tokens of the memory section (never above its budget)."
    )
    items: list[LedgerItem] = strawberry.field(description="Every item, in prompt order.")

    @classmethod
    def of(cls, ledger: p.ContextLedger) -> ContextLedger:
        return cls(
            context_window=ledger.context_window,
            reserved_completion_tokens=ledger.reserved_completion_tokens,
            available_input_tokens=ledger.available_input_tokens,
            estimated_input_tokens=ledger.estimated_input_tokens,
            remaining_tokens=ledger.remaining_tokens,
            overflow_tokens=ledger.overflow_tokens,
            fits=ledger.fits,
            system_tokens=ledger.system_tokens,
            message_tokens=ledger.message_tokens,
            tool_tokens=ledger.tool_tokens,
            memory_budget_tokens=ledger.memory_budget_tokens,
            memory_tokens=ledger.memory_tokens,
            items=[
                LedgerItem(section=i.section, name=i.name, tokens=i.tokens,
                           visibility=Visibility[i.visibility.value])
                for i in ledger.items
            ],
        )  # fmt: skip


@strawberry.type(
    description="A prompt, assembled: the caller's parts as carried, memory for the user turn, "
    "the ledger, the system prompt text and the Anthropic-compatible messages."
)
class PromptBundle:
    fragments: list[PromptFragment] = strawberry.field(description="In the caller's order.")
    environment: PromptEnvironment = strawberry.field(description="With the day.")
    project_context: list[ContextFile] = strawberry.field(
        description="Context files with hashes, caps and visibility."
    )
    tool_catalog: list[Tool] = strawberry.field(description="The tools, in the caller's order.")
    available_skills: list[Skill] = strawberry.field(description="Skill metadata.")
    transcript_tail: list[TranscriptEntry] = strawberry.field(
        description="The last maxTranscriptEntries entries (oldest first)."
    )
    omitted_transcript_entries: int = strawberry.field(
        description="Entries not in the messages: before the tail, or dropped to fit."
    )
    user_turn: str = strawberry.field(description="The user turn (the last message).")
    memory: ContextBundle | None = strawberry.field(
        description="What memory offers the user turn, under the ledger's budget; null when "
        "memory was not consulted (`memoryNote` says why)."
    )
    memory_note: str = strawberry.field(
        description="Why memory was not consulted; empty when it was."
    )
    history_reuse: HistoryReuse = strawberry.field(description="As sent.")
    prev_context_hash: str | None = strawberry.field(description="As sent, normalised.")
    prev_context_hashes: list[str] = strawberry.field(description="As sent, normalised.")
    context_ledger: ContextLedger = strawberry.field(description="Where the window goes.")
    rendered: str = strawberry.field(
        description="The system prompt: deterministic text in delimited sections <fragments>, "
        "<environment>, <project_context>, <skills>, <memory> (with its coverage note and "
        "chronology note), most stable first."
    )
    rendered_hash: str = strawberry.field(description="sha256 of `rendered` (UTF-8), hex.")
    messages: JSON = strawberry.field(
        description="The prompt as an Anthropic Messages request body without model and "
        "max_tokens: {system, messages: [{role, content: [{type: text, text}]}], tools?}. "
        "Turns alternate, the first is a user one, tool results are user text, the user turn "
        "is last."
    )
    run_id: str | None = strawberry.field(description="The run, when given.")
    step: int = strawberry.field(description="The step.")
    assembled_event: ContextEvent | None = strawberry.field(
        description="The 'assembled' event recorded for runId and step; null without runId."
    )

    @classmethod
    def of(cls, bundle: p.PromptBundle) -> PromptBundle:
        return cls(
            fragments=[
                PromptFragment(name=f.name, text=f.text, tokens=f.tokens)
                for f in bundle.fragments
            ],
            environment=PromptEnvironment(
                cwd=bundle.environment.cwd, model=bundle.environment.model,
                search_mode=bundle.environment.search_mode, date=bundle.environment.date,
            ),
            project_context=[
                ContextFile(
                    path=f.path, scope=f.scope, content=f.content, content_hash=f.content_hash,
                    truncated=f.truncated, visibility=Visibility[f.visibility.value],
                    tokens=f.tokens, original_tokens=f.original_tokens,
                )
                for f in bundle.project_context
            ],
            tool_catalog=[
                Tool(name=t.name, description=t.description, input_schema=JSON(t.input_schema),
                     tokens=t.tokens)
                for t in bundle.tool_catalog
            ],
            available_skills=[
                Skill(name=s.name, description=s.description, path=s.path, tokens=s.tokens)
                for s in bundle.available_skills
            ],
            transcript_tail=[
                TranscriptEntry(
                    index=e.index, role=TranscriptRole[e.role.value], text=e.text,
                    tool_name=e.tool_name, tokens=e.tokens,
                    visibility=Visibility[e.visibility.value],
                )
                for e in bundle.transcript_tail
            ],
            omitted_transcript_entries=bundle.omitted_transcript_entries,
            user_turn=bundle.user_turn,
            memory=None if bundle.memory is None else ContextBundle.of(bundle.memory),
            memory_note=bundle.memory_note,
            history_reuse=HistoryReuse[bundle.history_reuse.value],
            prev_context_hash=bundle.prev_context_hash,
            prev_context_hashes=list(bundle.prev_context_hashes),
            context_ledger=ContextLedger.of(bundle.context_ledger),
            rendered=bundle.rendered,
            rendered_hash=bundle.rendered_hash,
            messages=JSON(bundle.messages),
            run_id=bundle.run_id,
            step=bundle.step,
            assembled_event=(
                None if bundle.assembled_event is None else ContextEvent.of(bundle.assembled_event)
            ),
        )  # fmt: skip


@strawberry.type(description="Estimated against reported tokens for one step of a run.")
class DriftStep:
    step: int = strawberry.field(description="The step.")
    seq: int = strawberry.field(description="Its (latest) assembled event's seq.")
    est_tokens: int | None = strawberry.field(description="graphsvc's estimate.")
    reported_tokens: int | None = strawberry.field(
        description="What the provider counted (reportTokens); null when unreported."
    )
    ratio: float | None = strawberry.field(
        description="reportedTokens / estTokens (6 places); null when unreported."
    )


@strawberry.type(
    description="How far graphsvc's token estimates are from the provider's counts over a run: "
    "per step (the latest assembled event of each) and overall."
)
class DriftReport:
    run_id: str = strawberry.field(description="The run.")
    steps: list[DriftStep] = strawberry.field(description="Every assembled step, by step.")
    reported_steps: list[int] = strawberry.field(description="Steps with a reported count.")
    unreported_steps: list[int] = strawberry.field(
        description="Steps without one: listed, and left out of the totals and the ratio."
    )
    estimated_tokens: int = strawberry.field(description="Sum of estimates, reported steps.")
    reported_tokens: int = strawberry.field(description="Sum of reports, reported steps.")
    ratio: float | None = strawberry.field(
        description="reportedTokens / estimatedTokens over the reported steps (6 places; above "
        "1: graphsvc underestimates); null when no step is reported."
    )

    @classmethod
    def of(cls, report: p.DriftReport) -> DriftReport:
        return cls(
            run_id=report.run_id,
            steps=[
                DriftStep(step=s.step, seq=s.seq, est_tokens=s.est_tokens,
                          reported_tokens=s.reported_tokens, ratio=s.ratio)
                for s in report.steps
            ],
            reported_steps=list(report.reported_steps),
            unreported_steps=list(report.unreported_steps),
            estimated_tokens=report.estimated_tokens,
            reported_tokens=report.reported_tokens,
            ratio=report.ratio,
        )  # fmt: skip


@strawberry.type(description="A position in a page of memories.")
class MemoryEdge:
    cursor: str = strawberry.field(description="Pass as `after` to get the memories after this.")
    node: Memory = strawberry.field(description="The memory.")


@strawberry.type(description="Where a page ends.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="True when more memories follow.")
    end_cursor: str | None = strawberry.field(
        description="Cursor of the last memory of the page (null for an empty page)."
    )


@strawberry.type(description="A page of memories, newest first (by recordedAt, then id).")
class MemoryConnection:
    edges: list[MemoryEdge] = strawberry.field(description="The memories with their cursors.")
    nodes: list[Memory] = strawberry.field(description="The memories of the page.")
    page_info: PageInfo = strawberry.field(description="Whether and where the next page starts.")


@strawberry.type(description="Counts for the caller's namespace.")
class NamespaceStats:
    namespace: str = strawberry.field(description="The namespace.")
    memories: int = strawberry.field(description="Live memories.")
    links: int = strawberry.field(description="Links between them.")
    beliefs: int = strawberry.field(description="Stored beliefs.")
    terms: int = strawberry.field(description="Distinct analysed terms.")
    events: int = strawberry.field(description="Recorded context events.")


@strawberry.type(description="Who is calling: the API key's namespace and role.")
class Viewer:
    namespace: str = strawberry.field(description="The namespace every operation works in.")
    role: str = strawberry.field(description="read or write.")
    key_id: str = strawberry.field(
        description="Fingerprint of the API key (first 8 hex digits of its SHA-256)."
    )


# -- inputs ---------------------------------------------------------------------------------------


@strawberry.input(description="A memory to write.")
class MemoryInput:
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
    id: UUID | None = strawberry.field(
        default=None,
        description="Explicit id; by default one derived from the content. Rewriting an id with "
        "the same content is a no-op (retry-safe); with other content it is BAD_INPUT.",
    )

    def to_model(self, where: str) -> m.MemoryInput:
        try:
            return m.MemoryInput(
                id=self.id,
                text=self.text,
                kind=self.kind,
                occurred_at=self.occurred_at,
                tags=tuple(self.tags),
                source=self.source,
                confidence=self.confidence,
            )
        except ValidationError as exc:
            raise BadInputError(_prefixed(where, exc)) from exc


@strawberry.input(description="A link to write between two memories of the caller's namespace.")
class LinkInput:
    source: UUID = strawberry.field(description="Id of the memory the link starts at.")
    target: UUID = strawberry.field(description="Id of the memory the link points to.")
    kind: LinkKind = strawberry.field(description="The relationship type.")
    weight: float = strawberry.field(default=1.0, description="Strength, 0 to 1,000,000.")
    note: str | None = strawberry.field(
        default=None, description="Free text (up to 2,000 characters)."
    )

    def to_model(self, where: str) -> m.LinkInput:
        try:
            return m.LinkInput(
                source=self.source,
                target=self.target,
                kind=m.LinkKind(self.kind.name),
                weight=self.weight,
                note=self.note,
            )
        except ValidationError as exc:
            raise BadInputError(_prefixed(where, exc)) from exc


def _prefixed(where: str, exc: ValidationError) -> str:
    return validation_message(exc, where)


# -- prompt inputs --------------------------------------------------------------------------------


@strawberry.input(description="A piece of system prompt (persona, rules, format...).")
class FragmentInput:
    name: str = strawberry.field(description="A label, 1-128 characters.")
    text: str = strawberry.field(description="The text, rendered as sent.")


@strawberry.input(description="Where the agent runs; every field optional.")
class EnvironmentInput:
    cwd: str | None = strawberry.field(default=None, description="Working directory.")
    model: str | None = strawberry.field(default=None, description="Model name.")
    search_mode: str | None = strawberry.field(
        default=None, description="The harness's search mode (free text)."
    )
    date: dt.date | None = strawberry.field(
        default=None, description="Today (default: the server's UTC day)."
    )


@strawberry.input(description="A project context file such as AGENTS.md.")
class ContextFileInput:
    path: str = strawberry.field(description="Its path, 1-1024 characters.")
    content: str = strawberry.field(description="Its full text.")
    scope: str = strawberry.field(
        default="project", description="Where it applies: project, user, a directory..."
    )


@strawberry.input(description="A tool the model may call.")
class ToolInput:
    name: str = strawberry.field(description="1-64 letters, digits, '_' or '-'; unique.")
    description: str = strawberry.field(default="", description="What it does.")
    input_schema: JSON | None = strawberry.field(
        default=None, description='JSON Schema of its input (default {"type": "object"}).'
    )


@strawberry.input(description="A skill's metadata (its body stays with the caller).")
class SkillInput:
    name: str = strawberry.field(description="The skill's name, 1-128 characters.")
    description: str = strawberry.field(default="", description="When to use it.")
    path: str | None = strawberry.field(default=None, description="Where its body is.")


@strawberry.input(description="One entry of the conversation so far (send oldest first).")
class TranscriptEntryInput:
    role: TranscriptRole = strawberry.field(description="USER, ASSISTANT or TOOL.")
    text: str = strawberry.field(
        description="The text (not blank for USER and ASSISTANT; an empty tool result is "
        "sent as '(no output)')."
    )
    tool_name: str | None = strawberry.field(
        default=None, description="The tool, for a TOOL entry."
    )


@strawberry.input(
    description="What promptBundle assembles a prompt from. Only userTurn is required. Large "
    "inputs belong in variables (documents are limited in tokens, not variables)."
)
class PromptInput:
    user_turn: str = strawberry.field(description="What the user says now (not blank).")
    fragments: list[FragmentInput] = strawberry.field(
        default_factory=list, description="System prompt fragments, rendered in this order."
    )
    environment: EnvironmentInput | None = strawberry.field(
        default=None, description="Where the agent runs."
    )
    project_context: list[ContextFileInput] = strawberry.field(
        default_factory=list, description="Project context files."
    )
    tool_catalog: list[ToolInput] = strawberry.field(
        default_factory=list, description="Tools, declared in `messages.tools`."
    )
    available_skills: list[SkillInput] = strawberry.field(
        default_factory=list, description="Skill metadata."
    )
    transcript: list[TranscriptEntryInput] = strawberry.field(
        default_factory=list, description="The conversation so far, oldest first."
    )
    history_reuse: HistoryReuse = strawberry.field(
        default=HistoryReuse.UNAVAILABLE, description="Whether the provider keeps the history."
    )
    prev_context_hash: str | None = strawberry.field(
        default=None,
        description="With historyReuse AVAILABLE: a context file whose contentHash equals it "
        "is sent as an 'unchanged, text omitted' marker. 64 hex digits ('sha256:' allowed).",
    )
    prev_context_hashes: list[str] = strawberry.field(
        default_factory=list, description="As prevContextHash, for several files."
    )
    run_id: str | None = strawberry.field(
        default=None,
        description="Record the recall and an 'assembled' event for this run (needs a write "
        "key): 1-128 letters, digits, '_', '.', ':' or '-'.",
    )
    step: int = strawberry.field(default=0, description="The agent's step number (>= 0).")
    context_window: int | None = strawberry.field(
        default=None,
        description="Tokens the model reads and writes (default 200000: "
        "GRAPHSVC_PROMPT_CONTEXT_WINDOW).",
    )
    reserved_completion_tokens: int | None = strawberry.field(
        default=None,
        description="Kept free for the answer (default 8192: "
        "GRAPHSVC_PROMPT_RESERVED_COMPLETION_TOKENS).",
    )
    memory_budget_share: float | None = strawberry.field(
        default=None,
        description="The most of the available input memory may take, in [0, 1] (default "
        "0.1: GRAPHSVC_PROMPT_MEMORY_BUDGET_SHARE; 0: memory is not consulted).",
    )
    max_memory_tokens: int | None = strawberry.field(
        default=None,
        description="A cap on the memory section's tokens (default and limit: "
        "GRAPHSVC_MAX_BUDGET_TOKENS).",
    )
    max_transcript_entries: int | None = strawberry.field(
        default=None,
        description="How many of the last transcript entries, 0-1000 (default 20: "
        "GRAPHSVC_PROMPT_TRANSCRIPT_TAIL).",
    )
    max_context_file_tokens: int | None = strawberry.field(
        default=None,
        description="Size cap of one context file in estimated tokens (default 8000: "
        "GRAPHSVC_PROMPT_CONTEXT_FILE_MAX_TOKENS); longer files are cut and flagged `truncated`.",
    )
    memory_query: str | None = strawberry.field(
        default=None,
        description="What to recall for (default: the user turn, cut to GRAPHSVC_MAX_TEXT_CHARS).",
    )
    memory_stage: str | None = strawberry.field(
        default=None, description="Scoring stage of the recall: default, recent or exact."
    )
    memory_min_score: float | None = strawberry.field(
        default=None, description="Memory abstains when its top score is below this."
    )
    memory_max_capsules: int | None = strawberry.field(
        default=None, description="Most capsules (default GRAPHSVC_DEFAULT_MAX_CAPSULES)."
    )

    def to_model(self, where: str) -> p.PromptInput:
        """The domain request; pydantic's errors become BAD_INPUT naming the field."""
        env = self.environment
        raw: dict[str, Any] = {
            "userTurn": self.user_turn,
            "fragments": [{"name": f.name, "text": f.text} for f in self.fragments],
            "environment": None if env is None else {
                "cwd": env.cwd, "model": env.model, "searchMode": env.search_mode,
                "date": env.date,
            },
            "projectContext": [
                {"path": f.path, "scope": f.scope, "content": f.content}
                for f in self.project_context
            ],
            "toolCatalog": [
                {"name": t.name, "description": t.description,
                 **({} if t.input_schema is None else {"inputSchema": t.input_schema})}
                for t in self.tool_catalog
            ],
            "availableSkills": [
                {"name": s.name, "description": s.description, "path": s.path}
                for s in self.available_skills
            ],
            "transcript": [
                {"role": e.role.value, "text": e.text, "toolName": e.tool_name}
                for e in self.transcript
            ],
            "historyReuse": self.history_reuse.value,
            "prevContextHash": self.prev_context_hash,
            "prevContextHashes": list(self.prev_context_hashes),
            "runId": self.run_id,
            "step": self.step,
            "contextWindow": self.context_window,
            "reservedCompletionTokens": self.reserved_completion_tokens,
            "memoryBudgetShare": self.memory_budget_share,
            "maxMemoryTokens": self.max_memory_tokens,
            "maxTranscriptEntries": self.max_transcript_entries,
            "maxContextFileTokens": self.max_context_file_tokens,
            "memoryQuery": self.memory_query,
            "memoryStage": self.memory_stage,
            "memoryMinScore": self.memory_min_score,
            "memoryMaxCapsules": self.memory_max_capsules,
        }  # fmt: skip
        try:
            return p.PromptInput.model_validate(raw)
        except ValidationError as exc:
            raise BadInputError(_prefixed(where, exc)) from exc


# -- operations -----------------------------------------------------------------------------------


@strawberry.type(description="Reads. Every field works in the caller's namespace.")
class Query:
    @_resolver(description="A memory by id, or null when the namespace has none.")
    async def memory(
        self, info: Info, id: Annotated[UUID, _arg("The memory's id.")]
    ) -> Memory | None:
        ctx = info.context
        found = await ctx.run(ctx.service.get_memory, ctx.namespace, id)
        return None if found is None else Memory.of(found)

    @_resolver(
        description="Memories, newest first, a page at a time. Filters: `kind`, `tag`, and a time "
        "range [`since`, `until`) on occurredAt (recordedAt for memories without one)."
    )
    async def memories(
        self,
        info: Info,
        first: Annotated[int | None, _arg("Page size (default 20, at most 100).")] = None,
        after: Annotated[str | None, _arg("endCursor of the previous page.")] = None,
        kind: Annotated[str | None, _arg("Only memories of this kind.")] = None,
        tag: Annotated[str | None, _arg("Only memories with this tag.")] = None,
        since: Annotated[datetime | None, _arg("Only memories at or after this time.")] = None,
        until: Annotated[datetime | None, _arg("Only memories before this time.")] = None,
    ) -> MemoryConnection:
        ctx = info.context
        size = ctx.limits.default_page_size if first is None else first
        if size < 1:
            raise BadInputError(f"first must be at least 1, got {size}")
        if size > ctx.limits.max_page_size:
            raise LimitExceededError(
                f"first must be at most {ctx.limits.max_page_size}, got {size}: page with `after`"
            )
        key = None if after is None else decode_cursor(after)
        rows = await ctx.run(
            ctx.service.list_memories, ctx.namespace, after=key, limit=size + 1, kind=kind,
            tag=tag, since=None if since is None else m.as_utc(since),
            until=None if until is None else m.as_utc(until),
        )  # fmt: skip
        page = rows[:size]
        edges = [MemoryEdge(cursor=encode_cursor(mem), node=Memory.of(mem)) for mem in page]
        return MemoryConnection(
            edges=edges,
            nodes=[edge.node for edge in edges],
            page_info=PageInfo(
                has_next_page=len(rows) > size, end_cursor=edges[-1].cursor if edges else None
            ),
        )

    @_resolver(
        description="What memory offers a prompt for `query` under a token budget: capsules, "
        "exclusions with reasons, abstention, coverage and uncovered terms. With `runId`, a "
        "memory_recall event is recorded at `step`."
    )
    async def bundle(
        self,
        info: Info,
        query: Annotated[str, _arg("The question, in words.")],
        budget_tokens: Annotated[int | None, _arg("Token budget (default 1000).")] = None,
        stage: Annotated[str | None, _arg("Scoring stage: default, recent or exact.")] = None,
        min_score: Annotated[
            float | None, _arg("Abstain (skipped) when topScore is below this, in [0, 1].")
        ] = None,
        max_capsules: Annotated[int | None, _arg("Most capsules to pack (default 20).")] = None,
        run_id: Annotated[
            str | None, _arg("Record a memory_recall event for this run (needs a write key).")
        ] = None,
        step: Step = 0,
    ) -> ContextBundle:
        ctx = info.context
        if run_id is not None:
            ctx.caller.require_write("bundle with runId (it records a memory_recall event)")
        result = await ctx.run(
            ctx.service.bundle, ctx.namespace, query, budget_tokens=budget_tokens, stage=stage,
            min_score=min_score, max_capsules=max_capsules, run_id=run_id, step=step,
        )  # fmt: skip
        return ContextBundle.of(result)

    @_resolver(
        description="The belief memory supports about `cue`: the top-k hits and the graph "
        "context within `depth` hops. Reads only (the mutation also stores the belief)."
    )
    async def reconstruct(
        self, info: Info, cue: Cue, k: TopK = None, depth: Depth = None
    ) -> ReconstructedBelief:
        ctx = info.context
        result = await ctx.run(ctx.service.reconstruct, ctx.namespace, cue, k=k, depth=depth)
        return ReconstructedBelief.of(result)

    @_resolver(description="The context events of a run, in the order recorded.")
    async def context_events(self, info: Info, run_id: RunId) -> list[ContextEvent]:
        ctx = info.context
        found = await ctx.run(ctx.service.events, ctx.namespace, run_id)
        return [ContextEvent.of(event) for event in found]

    @_resolver(
        description="Assemble a prompt for the user turn: the caller's fragments, environment, "
        "project context (sha256, size cap, history reuse), tools, skills and transcript tail, "
        "plus memory for the turn under the ledger's budget; rendered as a system prompt and as "
        "Anthropic messages. With `input.runId` (write key), the recall and an 'assembled' "
        "event (estTokens = the estimate) are recorded at `input.step`."
    )
    async def prompt_bundle(
        self, info: Info, input: Annotated[PromptInput, _arg("What to assemble the prompt from.")]
    ) -> PromptBundle:
        ctx = info.context
        caller = ctx.caller
        request = input.to_model("input")
        if request.run_id is not None:
            caller.require_write("promptBundle with runId (it records events)")
        result = await ctx.run(ctx.service.prompt_bundle, ctx.namespace, request)
        return PromptBundle.of(result)

    @_resolver(
        description="Estimated against reported tokens over a run: per step (the latest "
        "assembled event of each) and overall. Steps without reportTokens are listed as "
        "unreported and left out of the ratio."
    )
    async def drift(self, info: Info, run_id: RunId) -> DriftReport:
        ctx = info.context
        report = await ctx.run(ctx.service.drift, ctx.namespace, run_id)
        return DriftReport.of(report)

    @_resolver(description="Counts for the caller's namespace.")
    async def stats(self, info: Info) -> NamespaceStats:
        ctx = info.context
        found = await ctx.run(ctx.service.stats, ctx.namespace)
        return NamespaceStats(
            namespace=found.namespace, memories=found.memories, links=found.links,
            beliefs=found.beliefs, terms=found.terms, events=found.events,
        )  # fmt: skip

    @_resolver(description="The caller: namespace, role and key fingerprint.")
    def viewer(self, info: Info) -> Viewer:
        caller = info.context.caller
        return Viewer(namespace=caller.namespace, role=caller.role.value, key_id=caller.key_id)


@strawberry.type(description="Writes. Every field needs a key with role 'write'.")
class Mutation:
    @_mutation(
        description="Write one memory. With `runId`, a memory_write event is recorded at `step`."
    )
    async def remember(
        self,
        info: Info,
        input: Annotated[MemoryInput, _arg("The memory.")],
        run_id: OptionalRunId = None,
        step: Step = 0,
    ) -> Memory:
        ctx = info.context
        ctx.caller.require_write("remember")
        item = input.to_model("input")
        stored = await ctx.run(ctx.service.remember, ctx.namespace, item, run_id=run_id, step=step)
        return Memory.of(stored)

    @_mutation(
        description="Write memories, all or nothing (at most GRAPHSVC_MAX_BATCH); returned in "
        "input order. Send large batches as variables."
    )
    async def remember_many(
        self,
        info: Info,
        inputs: Annotated[list[MemoryInput], _arg("The memories, in order.")],
        run_id: OptionalRunId = None,
        step: Step = 0,
    ) -> list[Memory]:
        ctx = info.context
        ctx.caller.require_write("rememberMany")
        limit = ctx.service.settings.max_batch
        if len(inputs) > limit:
            raise LimitExceededError(
                f"{len(inputs)} memories in one write; the limit is {limit} "
                "(GRAPHSVC_MAX_BATCH): split the batch"
            )
        items = [item.to_model(f"inputs.{i}") for i, item in enumerate(inputs)]
        stored = await ctx.run(
            ctx.service.remember_many, ctx.namespace, items, run_id=run_id, step=step
        )
        return [Memory.of(mem) for mem in stored]

    @_mutation(description="Link two memories of the caller's namespace.")
    async def link(self, info: Info, input: Annotated[LinkInput, _arg("The link.")]) -> Link:
        ctx = info.context
        ctx.caller.require_write("link")
        made = await ctx.run(ctx.service.link, ctx.namespace, input.to_model("input"))
        return Link.of(made)

    @_mutation(description="Write links, all or nothing; returned in input order.")
    async def link_many(
        self, info: Info, inputs: Annotated[list[LinkInput], _arg("The links.")]
    ) -> list[Link]:
        ctx = info.context
        ctx.caller.require_write("linkMany")
        limit = ctx.service.settings.max_batch
        if len(inputs) > limit:
            raise LimitExceededError(
                f"{len(inputs)} links in one write; the limit is {limit} "
                "(GRAPHSVC_MAX_BATCH): split the batch"
            )
        items = [item.to_model(f"inputs.{i}") for i, item in enumerate(inputs)]
        made = await ctx.run(ctx.service.link_many, ctx.namespace, items)
        return [Link.of(lk) for lk in made]

    @_mutation(
        description="Remove a memory, its links and the beliefs built on it; say what was removed."
    )
    async def forget(
        self, info: Info, id: Annotated[UUID, _arg("The memory to forget.")]
    ) -> ForgetReceipt:
        ctx = info.context
        ctx.caller.require_write("forget")
        receipt = await ctx.run(ctx.service.forget, ctx.namespace, id)
        return ForgetReceipt.of(receipt)

    @_mutation(
        description="As Query.reconstruct, and store the belief (DERIVED_FROM its sources, "
        "USED_CONTEXT the linked memories); with `runId`, record a memory_recall event."
    )
    async def reconstruct(
        self,
        info: Info,
        cue: Cue,
        k: TopK = None,
        depth: Depth = None,
        run_id: OptionalRunId = None,
        step: Step = 0,
    ) -> ReconstructedBelief:
        ctx = info.context
        ctx.caller.require_write("reconstruct (mutation)")
        result = await ctx.run(
            ctx.service.reconstruct_and_store, ctx.namespace, cue, k=k, depth=depth,
            run_id=run_id, step=step,
        )  # fmt: skip
        return ReconstructedBelief.of(result)

    @_mutation(
        description="Put the provider's count of input tokens on the step's 'assembled' event "
        "(the latest, when the step was assembled more than once), beside graphsvc's estimate. "
        "NOT_FOUND when the step has no 'assembled' event: call promptBundle with this runId and "
        "step first."
    )
    async def report_tokens(
        self,
        info: Info,
        run_id: RunId,
        step: Annotated[int, _arg("The step promptBundle was called with.")],
        reported_tokens: Annotated[
            int,
            _arg(
                "Every input token the provider counted (Anthropic: usage.input_tokens + "
                "cache_creation_input_tokens + cache_read_input_tokens)."
            ),
        ],
    ) -> ContextEvent:
        ctx = info.context
        ctx.caller.require_write("reportTokens")
        event = await ctx.run(
            ctx.service.report_tokens, ctx.namespace, run_id, step, reported_tokens
        )
        return ContextEvent.of(event)

    @_mutation(
        description="Record a decision of the agent harness: kind reread, reread_refused, "
        "served, replan or stalled (graphsvc records the other kinds itself; any other kind is "
        "BAD_INPUT, listing these)."
    )
    async def record_context_event(
        self,
        info: Info,
        run_id: RunId,
        step: Annotated[int, _arg("The agent's step number (>= 0).")],
        kind: Annotated[str, _arg("reread, reread_refused, served, replan or stalled.")],
        detail: Annotated[str | None, _arg("What happened and why, in words.")] = None,
        est_tokens: Annotated[int | None, _arg("Tokens involved, when it matters.")] = None,
    ) -> ContextEvent:
        ctx = info.context
        ctx.caller.require_write("recordContextEvent")
        event = await ctx.run(
            ctx.service.record_agent_event, ctx.namespace, run_id, step, kind, detail,
            est_tokens,
        )  # fmt: skip
        return ContextEvent.of(event)


# -- errors ---------------------------------------------------------------------------------------

# The limiters' own messages (strawberry, graphql-core) and what we tell the client instead.
# tests/test_api_schema.py triggers each one, so a change of wording upstream fails a test.
_LIMIT_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"exceeds maximum operation depth of (\d+)"),
        "the query nests fields deeper than {0} levels: ask for fewer nested fields, or make "
        "several requests",
    ),
    (
        re.compile(r"(\d+) aliases found\. Allowed: (\d+)"),
        "the query uses {0} aliases; the limit is {1}: split it into several requests",
    ),
    (
        re.compile(r"Document contains more than (\d+) tokens"),
        "the query document has more than {0} tokens: pass large inputs as variables, or split "
        "the request",
    ),
)


def _root_cause(error: GraphQLError) -> BaseException | None:
    original: BaseException | None = error.original_error
    while isinstance(original, GraphQLError) and original.original_error is not None:
        original = original.original_error
    return original


def classify(error: GraphQLError) -> tuple[str, str] | None:
    """``(code, message)`` for an error the caller caused or may see; ``None`` for an unexpected
    one (to be masked)."""
    cause = _root_cause(error)
    if isinstance(cause, GraphsvcError):
        return (cause.code, str(cause)) if cause.code in PUBLIC_CODES else None
    if isinstance(cause, ValidationError):
        return "BAD_INPUT", validation_message(cause)
    if error.path is not None:
        return None  # a resolver failed in a way graphsvc did not expect
    if cause is not None and not error.message.startswith("Variable '$"):
        return None  # not a variable coercion error: something broke before execution
    for pattern, template in _LIMIT_MESSAGES:
        found = pattern.search(error.message)
        if found:
            return "LIMIT_EXCEEDED", template.format(*found.groups())
    return "BAD_INPUT", error.message  # parse, validation or variable errors


def is_unexpected(error: GraphQLError) -> bool:
    """True for errors to mask: anything but graphsvc, request and limit errors."""
    return classify(error) is None


def _request_id(context: object) -> str:
    return context.request_id if isinstance(context, RequestContext) else "-"


class ErrorPolicy(MaskErrors):
    """Masks unexpected errors (``Unexpected error; request id X``) and gives every other error an
    ``extensions.code`` and a message that says what to do."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=is_unexpected)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        request_id = _request_id(self.execution_context.context)
        return GraphQLError(
            message=f"Unexpected error; request id {request_id}",
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": MASKED_CODE, "requestId": request_id},
        )

    def on_operation(self) -> Iterator[None]:
        yield from super().on_operation()
        result = self.execution_context.result
        errors = getattr(result, "errors", None)
        if result is None or not errors:
            return
        coded = [_with_code(error) for error in errors]
        result.errors = coded
        context = self.execution_context.context
        if isinstance(context, RequestContext):
            context.log["errors"] = sorted({str((e.extensions or {}).get("code")) for e in coded})


def _with_code(error: GraphQLError) -> GraphQLError:
    if error.extensions and "code" in error.extensions:
        return error
    found = classify(error)
    code, message = found if found is not None else (MASKED_CODE, error.message)
    return GraphQLError(
        message=message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions={**(error.extensions or {}), "code": code},
    )


class OperationLog(SchemaExtension):
    """Puts the operation's name and type into the request's access log line."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context.context
        if isinstance(context, RequestContext):
            context.log["operation"] = self.execution_context.operation_name
            with contextlib.suppress(RuntimeError):  # no operation in the document
                context.log["operation_type"] = self.execution_context.operation_type.value
        yield


class DocumentCache(ParserCache):
    """ParserCache that lets a document that does not parse through to strawberry's own parser,
    which reports the syntax error inside the operation (strawberry's ParserCache raises it from
    the hook, past the error extensions, so it would reach the client without a code)."""

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        if context.query:
            with contextlib.suppress(GraphQLError):
                context.graphql_document = self.cached_parse_document(
                    context.query, **context.parse_options
                )
        yield


class GraphsvcSchema(strawberry.Schema):
    """A schema that logs only unexpected errors, with the request id and the traceback; the
    errors a caller causes are answered, not logged as failures."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        request_id = _request_id(execution_context.context if execution_context else None)
        for error in errors:
            if is_unexpected(error):
                cause = _root_cause(error) or error
                logger.error(
                    "unexpected error: %s",
                    error.message,
                    exc_info=(type(cause), cause, cause.__traceback__),
                    extra={"fields": {"request_id": request_id, "path": error.path}},
                )
            else:
                logger.debug(
                    "request error: %s",
                    error.message,
                    extra={"fields": {"request_id": request_id}},
                )


def make_schema(limits: Limits | None = None) -> GraphsvcSchema:
    """The schema with these limits (defaults: :class:`Limits`)."""
    limits = limits or Limits()
    # The depth and alias limiters are validation rules. Each limiter instance makes new rule
    # classes, and ValidationCache keys on the rules: so the rules are made once per schema and
    # every request gets a fresh extension holding the same classes (cache hits for documents
    # seen before: parsing and validating the same document every time dominated small requests).
    rules = [
        *QueryDepthLimiter(max_depth=limits.max_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=limits.max_aliases).validation_rules,
    ]
    return GraphsvcSchema(
        query=Query,
        mutation=Mutation,
        extensions=[
            functools.partial(MaxTokensLimiter, max_token_count=limits.max_tokens),
            functools.partial(DocumentCache, maxsize=limits.document_cache),
            functools.partial(AddValidationRules, rules),
            functools.partial(ValidationCache, maxsize=limits.document_cache),
            OperationLog,
            ErrorPolicy,
        ],
    )


schema = make_schema()

__all__ = [
    "ErrorPolicy",
    "GraphsvcSchema",
    "Limits",
    "RequestContext",
    "classify",
    "make_schema",
    "schema",
]
