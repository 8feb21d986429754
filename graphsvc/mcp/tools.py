"""The MCP tools: their arguments, results, descriptions and what each one does.

Every tool calls :class:`~graphsvc.service.MemoryService` in the caller's namespace, exactly as the
GraphQL resolver of the same operation does (same service method, same write-key rule, same
validation and limits), and answers the same camelCase JSON (``Model.to_json_dict()``, without a
memory's stemmed ``terms``: :func:`to_json`) plus a short text rendering. Argument names are the
GraphQL argument names (the fields of ``input`` arguments are flattened to the top level:
``remember`` takes ``text``, ``kind``, ... directly).

The descriptions of arguments and results come from the GraphQL schema (the contract), so the two
surfaces never describe the same field in two ways; the tool descriptions themselves are written
for an agent deciding when to call what.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast
from uuid import UUID

import anyio.to_thread
from anyio import CapacityLimiter
from graphql import (
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLObjectType,
    GraphQLSchema,
    build_schema,
    get_named_type,
)
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from graphsvc.api.auth import Principal
from graphsvc.api.context import Limits, decode_cursor, encode_cursor
from graphsvc.api.schema import schema as graphql_schema
from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import (
    ContextBundle,
    ContextEvent,
    ForgetReceipt,
    Link,
    LinkInput,
    Memory,
    MemoryInput,
    Model,
    ReconstructedBelief,
    UtcDateTime,
)
from graphsvc.prompt import PromptBundle, PromptInput
from graphsvc.recall import default_thresholds
from graphsvc.requests import BundleQuery, ReconstructQuery
from graphsvc.service import MemoryService
from graphsvc.validity import as_of_phrase, moment_text

T = TypeVar("T")
A = TypeVar("A", bound=BaseModel)

_SHORT = 100  # characters of a memory's text in a text rendering


# -- arguments ------------------------------------------------------------------------------------


class RememberArgs(MemoryInput):
    """A memory to write, and the run to record a memory_write event for."""

    run_id: str | None = None
    step: int = 0

    def item(self) -> MemoryInput:
        """The memory input alone (without the run fields)."""
        return MemoryInput.model_validate(self.model_dump(exclude={"run_id", "step"}))


class RememberManyArgs(Model):
    """Memories to write, all or nothing."""

    inputs: tuple[MemoryInput, ...]
    run_id: str | None = None
    step: int = 0


class LinkArgs(LinkInput):
    """A link to write between two memories of the caller's namespace."""


class ForgetArgs(Model):
    """The memory to forget."""

    id: UUID


class RecallArgs(BundleQuery):
    """A question, and how much memory may offer for it (a bundle that records nothing)."""


class BundleArgs(BundleQuery):
    """A question, and how much memory may offer for it."""

    run_id: str | None = None
    step: int = 0


class ExplainArgs(ReconstructQuery):
    """A cue, how many direct hits and how far to walk the graph (a belief that is not stored)."""


class GetMemoryArgs(Model):
    """Memories to read by id."""

    ids: tuple[UUID, ...] = Field(
        min_length=1,
        description="Ids of memories of your namespace (from remember, memories, bundle "
        "capsules' `memoryId`, reconstruct's `sourceIds` and `linkedContextIds`).",
    )


class ReconstructArgs(ReconstructQuery):
    """A cue, how many direct hits and how far to walk the graph from them."""

    run_id: str | None = None
    step: int = 0


class MemoriesArgs(Model):
    """A page of memories, newest first, with filters."""

    first: int | None = None
    after: str | None = None
    kind: str | None = None
    tag: str | None = None
    since: UtcDateTime | None = None
    until: UtcDateTime | None = None


class ReportTokensArgs(Model):
    """The provider's count of input tokens for one assembled step of a run."""

    run_id: str
    step: int
    reported_tokens: int


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


# -- what the tools answer -----------------------------------------------------------------------

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


def _hide_memory_fields(schema: dict[str, Any]) -> None:
    """Drop :data:`HIDDEN_MEMORY_FIELDS` from the Memory object(s) of a JSON schema."""
    for definition in (schema, *schema.get("$defs", {}).values()):
        if definition.get("title") != Memory.__name__:
            continue
        for name in HIDDEN_MEMORY_FIELDS:
            definition.get("properties", {}).pop(name, None)
            if name in definition.get("required", []):
                definition["required"].remove(name)


# -- one call -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """What a tool call works with: the service, the caller, and the worker threads."""

    service: MemoryService
    principal: Principal
    limiter: CapacityLimiter | None = None

    @property
    def namespace(self) -> str:
        return self.principal.namespace

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Call a synchronous service function in a worker thread (stores block)."""
        call = functools.partial(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self.limiter)


@dataclass(frozen=True)
class Reply:
    """A tool's answer: the JSON (GraphQL field names) and a short text rendering."""

    data: dict[str, Any]
    text: str


@dataclass(frozen=True)
class ToolSpec(Generic[A]):
    """One tool: its name, what it is for, its argument and result models, where GraphQL
    describes the same operation (``(root type, field)``), and what it does."""

    name: str
    description: str
    args: type[A]
    result: type[BaseModel]
    graphql: tuple[str, str]
    annotations: ToolAnnotations
    handler: Callable[[Call, A], Awaitable[Reply]]
    precheck: Callable[[MemoryService, Mapping[str, Any]], None] | None = None
    #: A tool for the harness that drives an agent (prompt assembly, token reports), which an
    #: agent itself never calls: left out of the ``agent`` profile.
    harness: bool = False

    def parse(self, service: MemoryService, arguments: Mapping[str, Any]) -> A:
        """The validated arguments.

        Raises:
            pydantic.ValidationError: an argument is missing, unknown or of the wrong type.
            LimitExceededError: a batch larger than the settings allow (checked first).
        """
        if self.precheck is not None:
            self.precheck(service, arguments)
        return self.args.model_validate(dict(arguments))

    async def __call__(self, call: Call, args: BaseModel) -> Reply:
        return await self.handler(call, cast("A", args))


# -- text renderings ------------------------------------------------------------------------------


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


def bundle_text(bundle: ContextBundle) -> str:
    """A bundle's ``rendered`` text (its header says what is offered, its last line what memory
    does not cover), then the abstention figures."""
    status = "skipped: memory abstains" if bundle.skipped else "offered"
    return (
        f"{bundle.rendered}\n(topScore {bundle.top_score:.3f}, minScore {bundle.min_score:.3f}: "
        f"{status})"
    )


def belief_text(belief: ReconstructedBelief) -> str:
    """A belief's summary and whether it was stored."""
    if belief.belief_id is None:
        stored = "no memory matches the cue, so no belief was stored"
    else:
        stored = (
            f"stored as belief {belief.belief_id} (graphsvc://belief/{belief.belief_id}); "
            f"confidence {belief.confidence:.3f}"
        )
    return f"{belief.summary}\n\n({stored})"


def prompt_text(bundle: PromptBundle) -> str:
    """Where a prompt's tokens go, and what memory offered it."""
    ledger = bundle.context_ledger
    fit = "fits" if ledger.fits else f"over by {ledger.overflow_tokens}"
    past = (
        ""
        if bundle.memory is None or bundle.memory.as_of is None
        else (f" {as_of_phrase(bundle.memory.as_of)}")
    )
    if bundle.memory is None:
        memory = f"memory not consulted: {bundle.memory_note}"
    elif bundle.memory.skipped:
        memory = f"memory{past} abstained (skipped)"
    else:
        # The capsules' figure is the one the run's events record (memory_recall's estTokens,
        # the assembled event's detail); the section's adds the header and notes around them.
        memory = (
            f"memory{past}: {len(bundle.memory.capsules)} capsule(s), {bundle.memory.used_tokens}/"
            f"{bundle.memory.budget_tokens} capsule tokens (the memory section, with its header "
            f"and notes: {ledger.memory_tokens}/{ledger.memory_budget_tokens}), coverage "
            f"{bundle.memory.evidence_coverage:.3f}"
        )
    return (
        f"Prompt assembled: {ledger.estimated_input_tokens}/{ledger.available_input_tokens} "
        f"estimated input tokens ({fit}); {memory}; {len(bundle.messages.get('messages', []))} "
        f"message(s); rendered sha256 {bundle.rendered_hash}. The system prompt is `rendered`, "
        "the request body `messages`."
    )


# -- the tools ------------------------------------------------------------------------------------
#
# Each one checks the caller's role as the GraphQL resolver of the same operation does
# (ForbiddenError for a read key that writes) and lets the service's errors through:
# graphsvc.mcp.server turns every GraphsvcError into a tool error that starts with its code.


async def remember(call: Call, args: RememberArgs) -> Reply:
    call.principal.require_write("remember")
    stored = await call.run(
        call.service.remember, call.namespace, args.item(), run_id=args.run_id, step=args.step
    )
    return Reply(to_json(stored), f"Remembered {stored.id}: {short(stored.text)}")


def _check_batch(service: MemoryService, arguments: Mapping[str, Any]) -> None:
    """The batch limit before anything else, as GraphQL's rememberMany checks it (validating
    an oversized batch item by item first would cost as much as the batch)."""
    inputs = arguments.get("inputs")
    limit = service.settings.max_batch
    if isinstance(inputs, list | tuple) and len(inputs) > limit:
        raise LimitExceededError(
            f"{len(inputs)} memories in one write; the limit is {limit} "
            "(GRAPHSVC_MAX_BATCH): split the batch"
        )


async def remember_many(call: Call, args: RememberManyArgs) -> Reply:
    call.principal.require_write("remember_many")
    stored = await call.run(
        call.service.remember_many,
        call.namespace,
        list(args.inputs),
        run_id=args.run_id,
        step=args.step,
    )
    result = RememberManyResult(memories=tuple(stored))
    lines = [f"Remembered {len(stored)} memory(ies), in input order:"]
    lines += [memory_line(memory) for memory in stored]
    return Reply(to_json(result), "\n".join(lines))


async def link(call: Call, args: LinkArgs) -> Reply:
    call.principal.require_write("link")
    item = LinkInput.model_validate(args.model_dump())
    made = await call.run(call.service.link, call.namespace, item)
    return Reply(made.to_json_dict(), f"Linked {made.source} -[{made.kind.value}]-> {made.target}")


async def forget(call: Call, args: ForgetArgs) -> Reply:
    call.principal.require_write("forget")
    receipt = await call.run(call.service.forget, call.namespace, args.id)
    text = (
        f"Forgot {receipt.memory_id}: removed {len(receipt.removed_links)} link(s) and "
        f"{len(receipt.removed_belief_ids)} belief(s) built on it."
    )
    return Reply(receipt.to_json_dict(), text)


async def bundle(call: Call, args: BundleArgs) -> Reply:
    if args.run_id is not None:
        call.principal.require_write("bundle with runId (it records a memory_recall event)")
    return await _bundle(call, args, args.run_id, args.step)


async def recall(call: Call, args: RecallArgs) -> Reply:
    return await _bundle(call, args, None, 0)


async def _bundle(call: Call, args: BundleQuery, run_id: str | None, step: int) -> Reply:
    """The bundle ``args`` ask for, recorded as a memory_recall event of ``run_id`` if given."""
    result = await call.run(call.service.bundle, call.namespace, args, run_id=run_id, step=step)
    return Reply(result.to_json_dict(), bundle_text(result))


async def explain(call: Call, args: ExplainArgs) -> Reply:
    return await _belief(call, args, call.service.reconstruct)


async def _belief(
    call: Call, args: ReconstructQuery, build: Callable[..., ReconstructedBelief]
) -> Reply:
    """The belief ``args`` ask for, made by ``build`` (reconstruct, or reconstruct and store)."""
    belief = await call.run(build, call.namespace, args)
    return Reply(to_json(belief), belief_text(belief))


async def get_memory(call: Call, args: GetMemoryArgs) -> Reply:
    limit = Limits.from_settings(call.service.settings).max_page_size
    ids = tuple(dict.fromkeys(args.ids))  # each once, in the order asked
    if len(ids) > limit:
        raise LimitExceededError(
            f"{len(ids)} ids in one call; the limit is {limit} (GRAPHSVC_MAX_PAGE_SIZE): "
            "ask in smaller groups"
        )
    found = await call.run(call.service.get_memories, call.namespace, ids)
    by_id = {memory.id: memory for memory in found}
    kept = tuple(by_id[i] for i in ids if i in by_id)
    links = await call.run(call.service.links_of, call.namespace, [m.id for m in kept])
    missing = tuple(i for i in ids if i not in by_id)
    result = GetMemoryResult(memories=kept, links=tuple(links), not_found=missing)
    lines = [f"{len(kept)} of {len(ids)} memory(ies) found:"] if kept else []
    lines += [full_memory_line(memory) for memory in kept]
    lines += [f"- link {lk.source} -[{lk.kind.value}]-> {lk.target}" for lk in links]
    lines += [
        f"- not found: {i} (no memory with this id in your namespace: never written, "
        "forgotten, or another namespace's)"
        for i in missing
    ]
    return Reply(to_json(result), "\n".join(lines))


async def reconstruct(call: Call, args: ReconstructArgs) -> Reply:
    call.principal.require_write("reconstruct (it stores the belief)")
    store = functools.partial(
        call.service.reconstruct_and_store, run_id=args.run_id, step=args.step
    )
    return await _belief(call, args, store)


async def memories(call: Call, args: MemoriesArgs) -> Reply:
    limits = Limits.from_settings(call.service.settings)
    size = limits.default_page_size if args.first is None else args.first
    if size < 1:
        raise BadInputError(f"first must be at least 1, got {size}")
    if size > limits.max_page_size:
        raise LimitExceededError(
            f"first must be at most {limits.max_page_size}, got {size}: page with `after`"
        )
    key = None if args.after is None else decode_cursor(args.after)
    rows = await call.run(
        call.service.list_memories,
        call.namespace,
        after=key,
        limit=size + 1,
        kind=args.kind,
        tag=args.tag,
        since=args.since,
        until=args.until,
    )
    page = rows[:size]
    more = len(rows) > size
    end = encode_cursor(page[-1]) if page else None
    result = MemoryConnection(
        nodes=tuple(page), page_info=PageInfo(has_next_page=more, end_cursor=end)
    )
    lines = [f"{len(page)} memory(ies), newest first:"] + [memory_line(m) for m in page]
    lines.append(f"More: call again with after={end!r}." if more else "No more memories.")
    return Reply(to_json(result), "\n".join(lines))


async def prompt_bundle(call: Call, args: PromptInput) -> Reply:
    if args.run_id is not None:
        call.principal.require_write("prompt_bundle with runId (it records events)")
    result = await call.run(call.service.prompt_bundle, call.namespace, args)
    return Reply(result.to_json_dict(), prompt_text(result))


async def report_tokens(call: Call, args: ReportTokensArgs) -> Reply:
    call.principal.require_write("report_tokens")
    event = await call.run(
        call.service.report_tokens, call.namespace, args.run_id, args.step, args.reported_tokens
    )
    text = (
        f"Step {event.step} of run {event.run_id}: estimated {event.est_tokens} input tokens, "
        f"the provider reported {event.reported_tokens}."
    )
    return Reply(event.to_json_dict(), text)


_WRITES = "Needs a write key."
_ABSTENTION = (
    "Read the honesty fields first: `skipped` true means memory abstains (`topScore`, the "
    "probability that memory holds the answer, made of `answerEvidence`, is below `minScore`): "
    "answer without memory or say it does not know. "
    f"`minScore` defaults to the stage's threshold ({default_thresholds()}); 0 turns "
    "abstention off. `evidenceCoverage` (0-1) and `uncoveredWords` (the question's words no "
    "capsule mentions) say what may be missing. A capsule whose `validity` is not CURRENT is "
    "no longer (or not yet) true, and `rendered` marks it ([until 2024-06-01, superseded]). "
    "`asOf` answers as of a past instant (`asOfMode` VALID: true then; KNOWN: recorded then). "
    "`pendingVectors` above 0: that many memories wait for their vector, found by words but "
    "not yet by meaning (`retrievalNote` says why recall by meaning was incomplete or off)."
)


def _hints(
    title: str,
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool | None = None,
) -> ToolAnnotations:
    """What a host may assume about a tool: every tool stays inside graphsvc (a closed world)."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


TOOLS: tuple[ToolSpec[Any], ...] = (
    ToolSpec(
        name="remember",
        description="Store one memory (fact, event, decision, observation) so later questions can "
        "recall it. Give `occurredAt` for events, `validFrom`/`validUntil` for facts true "
        "over a period, a `kind` and `tags`. The same content again is a no-op (retry-safe). "
        f"Returns the memory; its `id` is what link and forget take. {_WRITES}",
        args=RememberArgs,
        result=Memory,
        graphql=("Mutation", "remember"),
        annotations=_hints("Remember", idempotent=True),
        handler=remember,
    ),
    ToolSpec(
        name="remember_many",
        description="Store several memories at once, all or nothing (at most GRAPHSVC_MAX_BATCH). "
        "Same rules as remember. Returns `memories` in input order. "
        f"{_WRITES}",
        args=RememberManyArgs,
        result=RememberManyResult,
        graphql=("Mutation", "rememberMany"),
        annotations=_hints("Remember many", idempotent=True),
        handler=remember_many,
        precheck=_check_batch,
    ),
    ToolSpec(
        name="link",
        description="Relate two memories: CAUSES (source caused target), PRECEDES (source came "
        "first), RELATES_TO, SUPERSEDES (source is newer and replaces target: a fact that "
        "changed; the older one is then marked superseded). Both must exist. "
        f"{_WRITES}",
        args=LinkArgs,
        result=Link,
        graphql=("Mutation", "link"),
        annotations=_hints("Link memories", idempotent=True),
        handler=link,
    ),
    ToolSpec(
        name="forget",
        description="Remove a memory for good, with its links and the beliefs built on it. For "
        "wrong or private information; when a fact changed, remember the new one and link it "
        f"SUPERSEDES the old one instead. {_WRITES}",
        args=ForgetArgs,
        result=ForgetReceipt,
        graphql=("Mutation", "forget"),
        annotations=_hints("Forget", destructive=True, idempotent=False),
        handler=forget,
    ),
    ToolSpec(
        name="bundle",
        description="Memory for a question, under a token budget: put `rendered` into your "
        f"context. {_ABSTENTION} With `runId` it records a memory_recall event (write key); "
        "without it, use recall.",
        args=BundleArgs,
        result=ContextBundle,
        graphql=("Query", "bundle"),
        annotations=_hints("Memory for a question"),
        handler=bundle,
    ),
    ToolSpec(
        name="recall",
        description="Memory for a question, under a token budget (read only): call it before "
        "answering anything that may depend on what was remembered, and put `rendered` into "
        f"your context. {_ABSTENTION}",
        args=RecallArgs,
        result=ContextBundle,
        graphql=("Query", "bundle"),
        annotations=_hints("Recall for a question", read_only=True, idempotent=True),
        handler=recall,
    ),
    ToolSpec(
        name="explain",
        description="What memory supports about a cue, and why (read only): the top `k` memories "
        "(`sourceIds`) and the causes, effects and related memories within `depth` links, "
        "summarised in `summary`; `confidence` is the sources' mean score. For 'why' and "
        "'what led to' questions.",
        args=ExplainArgs,
        result=ReconstructedBelief,
        graphql=("Query", "reconstruct"),
        annotations=_hints("Explain a belief", read_only=True, idempotent=True),
        handler=explain,
    ),
    ToolSpec(
        name="get_memory",
        description="Read memories by id (from any other answer), with their whole text and links; "
        "ids with no memory are listed in `notFound`.",
        args=GetMemoryArgs,
        result=GetMemoryResult,
        graphql=("Query", "memory"),
        annotations=_hints("Read memories by id", read_only=True, idempotent=True),
        handler=get_memory,
    ),
    ToolSpec(
        name="reconstruct",
        description="As explain, and store the belief (`beliefId`; removed when a memory it "
        f"used is forgotten). {_WRITES}",
        args=ReconstructArgs,
        result=ReconstructedBelief,
        graphql=("Mutation", "reconstruct"),
        annotations=_hints("Reconstruct a belief", idempotent=False),
        handler=reconstruct,
    ),
    ToolSpec(
        name="memories",
        description="Browse memories newest first, a page at a time, by `kind`, `tag` and a time "
        "range [`since`, `until`); pass `pageInfo.endCursor` as `after` for the next page. "
        "To answer a question, use recall.",
        args=MemoriesArgs,
        result=MemoryConnection,
        graphql=("Query", "memories"),
        annotations=_hints("Browse memories", read_only=True),
        handler=memories,
    ),
    ToolSpec(
        name="prompt_bundle",
        description="Assemble a whole prompt for the user's turn: your system prompt "
        "fragments, environment, project context files (sha256, size cap, an 'unchanged' "
        "marker for files the provider already has), tools, skills and the transcript tail, "
        "plus memory recalled for the turn, under a token ledger. Returns `rendered` (the "
        "system prompt), `messages` (an Anthropic Messages request body), `contextLedger` "
        "(where every token goes, and whether it `fits`), and `memory`: a bundle with the same "
        "abstention (`skipped`, `topScore` vs `minScore`) and coverage (`evidenceCoverage`, "
        "`uncoveredTerms`) fields as the bundle tool, or null when memory was not consulted "
        "(`memoryNote` says why). With `runId` (write key) it records the recall and an "
        "'assembled' event for `step`; after the provider answers, call report_tokens.",
        args=PromptInput,
        result=PromptBundle,
        graphql=("Query", "promptBundle"),
        annotations=_hints("Assemble a prompt"),
        handler=prompt_bundle,
        harness=True,
    ),
    ToolSpec(
        name="report_tokens",
        description="After sending a prompt that prompt_bundle assembled with `runId` and "
        "`step`, report the input tokens the provider counted for it (Anthropic: "
        "usage.input_tokens + cache_creation_input_tokens + cache_read_input_tokens). graphsvc "
        "keeps it beside its own estimate, to measure how far its estimates drift. NOT_FOUND "
        "when that step has no assembled event: call prompt_bundle with this runId and step "
        f"first. {_WRITES}",
        args=ReportTokensArgs,
        result=ContextEvent,
        graphql=("Mutation", "reportTokens"),
        annotations=_hints("Report provider tokens", idempotent=True),
        handler=report_tokens,
        harness=True,
    ),
)

TOOL_NAMES = tuple(spec.name for spec in TOOLS)

#: The tool profiles (``GRAPHSVC_MCP_TOOLS``): an agent's tools (every tool but the harness's,
#: the default), a harness's (prompt assembly and token reports), or all of them.
PROFILES: dict[str, tuple[ToolSpec[Any], ...]] = {
    "agent": tuple(spec for spec in TOOLS if not spec.harness),
    "harness": tuple(spec for spec in TOOLS if spec.harness),
    "all": TOOLS,
}


# -- schemas, described by the GraphQL contract ---------------------------------------------------


@functools.cache
def contract() -> GraphQLSchema:
    """The GraphQL schema as graphql-core types, for its descriptions."""
    return build_schema(graphql_schema.as_str())


def _field(root: str, name: str) -> GraphQLField:
    gql = contract()
    parent = gql.get_type(root)
    if not isinstance(parent, GraphQLObjectType) or name not in parent.fields:
        raise KeyError(f"GraphQL has no field {root}.{name}: update the MCP tool table")
    found: GraphQLField = parent.fields[name]
    return found


def _type_fields(name: str) -> dict[str, str]:
    """Descriptions of the fields of a GraphQL object or input type (empty for other names)."""
    found = contract().get_type(name)
    if isinstance(found, GraphQLObjectType | GraphQLInputObjectType):
        return {key: f.description for key, f in found.fields.items() if f.description}
    return {}


def _describe(schema: dict[str, Any], fields: Mapping[str, str]) -> None:
    """Fill the missing descriptions of a JSON schema's properties (and of its $defs, from the
    GraphQL type of the same name; pydantic's own descriptions win), and drop pydantic's
    titles."""
    schema.pop("title", None)  # pydantic's titles repeat the names: tokens for nothing
    for key, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        if key in fields and "description" not in prop:
            prop["description"] = fields[key]
    for name, definition in schema.get("$defs", {}).items():
        if definition.get("type") == "object":
            _describe(definition, _type_fields(name))


def input_schema(spec: ToolSpec[Any]) -> dict[str, Any]:
    """The tool's JSON schema of arguments (camelCase), described by the GraphQL arguments of
    the same operation and, for a flattened ``input`` argument, by the fields of its type."""
    schema: dict[str, Any] = spec.args.model_json_schema(by_alias=True)
    field = _field(*spec.graphql)
    fields = {name: arg.description for name, arg in field.args.items() if arg.description}
    if "input" in field.args:
        fields.pop("input", None)
        fields.update(_type_fields(get_named_type(field.args["input"].type).name))
    _describe(schema, fields)
    _compact(schema)
    return schema


def _compact(node: Any) -> None:
    """Shorten a JSON schema without changing what an agent may send: an optional argument's
    ``anyOf: [X, {"type": "null"}]`` with ``default: null`` becomes ``X`` (leaving it out means
    the same), at every depth."""
    if isinstance(node, dict):
        for prop in node.get("properties", {}).values():
            options = prop.get("anyOf")
            if (
                isinstance(options, list)
                and len(options) == 2
                and {"type": "null"} in options
                and prop.get("default", 0) is None
            ):
                (kept,) = [o for o in options if o != {"type": "null"}]
                del prop["anyOf"], prop["default"]
                prop.update({k: v for k, v in kept.items() if k not in prop})
        for value in node.values():
            _compact(value)
    elif isinstance(node, list):
        for value in node:
            _compact(value)


def output_schema(spec: ToolSpec[Any]) -> dict[str, Any]:
    """The JSON schema of the tool's structured result: its shape, for a client that checks
    it. Its fields are not described here (the tool's description says what an agent reads in
    the result, and GraphQL's schema describes every field): a host may put the listing into a
    model's context, and descriptions of every nested field would cost it thousands of
    tokens."""
    schema: dict[str, Any] = spec.result.model_json_schema(by_alias=True, mode="serialization")
    _hide_memory_fields(schema)
    _undescribe(schema)
    return schema


def _undescribe(node: Any) -> None:
    """Drop the titles and descriptions of a JSON schema, at every depth."""
    if isinstance(node, dict):
        for key in ("title", "description"):
            if isinstance(node.get(key), str):  # a property so named is a schema, kept
                node.pop(key)
        for value in node.values():
            _undescribe(value)
    elif isinstance(node, list):
        for value in node:
            _undescribe(value)


__all__ = [
    "HIDDEN_MEMORY_FIELDS",
    "PROFILES",
    "TOOLS",
    "TOOL_NAMES",
    "Call",
    "GetMemoryResult",
    "MemoryConnection",
    "PageInfo",
    "RememberManyResult",
    "Reply",
    "ToolSpec",
    "input_schema",
    "output_schema",
    "to_json",
]
