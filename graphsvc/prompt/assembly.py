"""Prompt assembly's pure functions: carry the caller's parts, budget and render the memory
section, lower the prompt to messages, close the ledger, and summarise the trace.

Assembly is two pure steps around one recall, so that everything but the recall is unit-tested
without a store:

1. :func:`plan_prompt` carries the caller's parts (tail of the transcript, size caps, history
   reuse), renders every section but memory, and works out the memory budget from the ledger;
2. the service recalls a bundle for the user turn under ``plan.bundle_budget`` (no recall when it
   is 0);
3. :func:`finish_prompt` renders the memory section, the system prompt and the messages, and
   closes the ledger.

The rendered system prompt is deterministic: the same input (and the same memory) gives the same
bytes. Sections, in this order so that what changes least comes first (provider prompt caches
match on a prefix): ``<fragments>``, ``<environment>`` (the date, rounded to the day, keeps it
stable within a day), ``<project_context>``, ``<skills>``, ``<memory>`` (with its coverage note
and chronology note). Empty sections are left out, except memory, which always says what it
offers or why it offers nothing.

Tokens are graphsvc's estimate (:func:`graphsvc.text.estimate_tokens`, one per 4 characters):
the system prompt, each text block of the messages, and each tool definition as compact JSON.
What the provider really counted is recorded later with ``reportTokens``, and ``graphsvc drift``
compares the two.

Nothing here does I/O: :meth:`graphsvc.service.MemoryService.prompt_bundle` validates against the
settings, recalls, and records the trace (:mod:`graphsvc.prompt.trace` summarises it). The data
these functions take and give is in :mod:`graphsvc.prompt.models`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import AsOf, AsOfMode, ContextBundle, OrderReason, Validity
from graphsvc.prompt.models import (
    UNCHANGED_MARKER,
    ContextFile,
    ContextFileInput,
    ContextLedger,
    EnvironmentInput,
    FragmentInput,
    HistoryReuse,
    LedgerItem,
    PromptBundle,
    PromptDefaults,
    PromptEnvironment,
    PromptFragment,
    PromptInput,
    Skill,
    SkillInput,
    Tool,
    ToolInput,
    TranscriptEntry,
    TranscriptEntryInput,
    TranscriptRole,
    Visibility,
)
from graphsvc.recall import get_stage
from graphsvc.text import asks_about_order, estimate_tokens, query_words
from graphsvc.validity import as_of_phrase

CHARS_PER_TOKEN = 4  # the estimator's ratio (graphsvc.text.estimate_tokens)


# -- small helpers --------------------------------------------------------------------------------


def sha256_hex(text: str) -> str:
    """The stable content hash: sha256 of the UTF-8 bytes, 64 lowercase hex digits (what
    ``sha256sum`` prints for the same bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _section(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def _body(text: str) -> str:
    """A text inside a block: one trailing newline is left out (the block adds its own)."""
    return text.removesuffix("\n")


def _tokens(text: str) -> int:
    """Estimated tokens of a text, 0 for no text."""
    return estimate_tokens(text) if text else 0


def render_system(sections: Sequence[str]) -> str:
    """Sections joined by a blank line; empty ones left out."""
    return "\n\n".join(s for s in sections if s)


# -- window ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """The request's window settings with every default applied and checked."""

    context_window: int
    reserved_completion_tokens: int
    memory_budget_share: float
    max_memory_tokens: int
    max_transcript_entries: int
    max_context_file_tokens: int
    max_capsules: int

    @property
    def available_input_tokens(self) -> int:
        return self.context_window - self.reserved_completion_tokens


def resolve_window(
    request: PromptInput,
    defaults: PromptDefaults,
    *,
    max_budget_tokens: int,
    default_max_capsules: int,
    max_capsules_limit: int,
) -> Window:
    """Apply the defaults and check what only makes sense together.

    Raises:
        BadInputError: the reserved completion tokens leave no input, or the stage is unknown.
        LimitExceededError: ``maxMemoryTokens`` or ``memoryMaxCapsules`` above the service limits.
    """
    window = request.context_window or defaults.context_window
    reserved = (
        defaults.reserved_completion_tokens
        if request.reserved_completion_tokens is None
        else request.reserved_completion_tokens
    )
    if reserved >= window:
        raise BadInputError(
            f"reservedCompletionTokens ({reserved}) must be below contextWindow ({window}): "
            "leave room for the input"
        )
    max_memory = (
        max_budget_tokens if request.max_memory_tokens is None else request.max_memory_tokens
    )
    if max_memory > max_budget_tokens:
        raise LimitExceededError(
            f"maxMemoryTokens must be at most {max_budget_tokens} (GRAPHSVC_MAX_BUDGET_TOKENS), "
            f"got {max_memory}"
        )
    capsules = (
        default_max_capsules if request.memory_max_capsules is None else request.memory_max_capsules
    )
    if capsules > max_capsules_limit:
        raise LimitExceededError(
            f"memoryMaxCapsules must be at most {max_capsules_limit} "
            f"(GRAPHSVC_MAX_CAPSULES_LIMIT), got {capsules}"
        )
    if request.memory_stage is not None:
        get_stage(request.memory_stage)
    share = (
        defaults.memory_budget_share
        if request.memory_budget_share is None
        else request.memory_budget_share
    )
    return Window(
        context_window=window,
        reserved_completion_tokens=reserved,
        memory_budget_share=share,
        max_memory_tokens=max_memory,
        max_transcript_entries=(
            defaults.max_transcript_entries
            if request.max_transcript_entries is None
            else request.max_transcript_entries
        ),
        max_context_file_tokens=(
            request.max_context_file_tokens or defaults.max_context_file_tokens
        ),
        max_capsules=capsules,
    )


# -- carrying the caller's parts ------------------------------------------------------------------


def carry_fragment(fragment: FragmentInput) -> tuple[PromptFragment, str]:
    """A fragment and its block of the ``<fragments>`` section."""
    block = f'<fragment name="{_attr(fragment.name)}">\n{_body(fragment.text)}\n</fragment>'
    return PromptFragment(name=fragment.name, text=fragment.text, tokens=_tokens(block)), block


def carry_environment(given: EnvironmentInput | None, today: dt.date) -> PromptEnvironment:
    """The environment with its day (the caller's, else ``today``)."""
    given = given or EnvironmentInput()
    return PromptEnvironment(
        cwd=given.cwd, model=given.model, search_mode=given.search_mode, date=given.date or today
    )


def render_environment(env: PromptEnvironment) -> str:
    """The ``<environment>`` section: the date, then what the caller told."""
    lines = [f"date: {env.date.isoformat()}"]
    for label, value in (("cwd", env.cwd), ("model", env.model), ("search mode", env.search_mode)):
        if value is not None:
            lines.append(f"{label}: {value}")
    return _section("environment", "\n".join(lines))


def carry_file(
    file: ContextFileInput, *, cap_tokens: int, unchanged: frozenset[str]
) -> tuple[ContextFile, str]:
    """A context file and its block: cut at ``cap_tokens`` (flagged ``truncated``), or an
    "unchanged" marker when its hash is one the provider already has."""
    digest = sha256_hex(file.content)
    cap_chars = cap_tokens * CHARS_PER_TOKEN
    truncated = len(file.content) > cap_chars
    content = file.content[:cap_chars] if truncated else file.content
    attrs = f'path="{_attr(file.path)}" scope="{_attr(file.scope)}" sha256="{digest}"'
    if digest in unchanged:
        visibility = Visibility.UNCHANGED
        block = f'<file {attrs} status="unchanged">\n{UNCHANGED_MARKER}\n</file>'
    elif truncated:
        visibility = Visibility.TRUNCATED
        note = f"[truncated: the first {cap_chars} of {len(file.content)} characters]"
        block = f'<file {attrs} status="truncated">\n{_body(content)}\n{note}\n</file>'
    else:
        visibility = Visibility.FULL
        block = f"<file {attrs}>\n{_body(content)}\n</file>"
    carried = ContextFile(
        path=file.path,
        scope=file.scope,
        content=content,
        content_hash=digest,
        truncated=truncated,
        visibility=visibility,
        tokens=_tokens(block),
        original_tokens=_tokens(file.content),
    )
    return carried, block


def tool_definition(tool: Tool) -> dict[str, Any]:
    """A tool as the Anthropic Messages API declares it (``description`` only when given)."""
    definition: dict[str, Any] = {"name": tool.name}
    if tool.description:
        definition["description"] = tool.description
    definition["input_schema"] = tool.input_schema
    return definition


def carry_tool(tool: ToolInput) -> Tool:
    """A tool, costed as its definition in compact JSON."""
    declared = Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.declared_schema(),
        tokens=0,
    )
    as_json = json.dumps(
        tool_definition(declared), ensure_ascii=False, separators=(",", ":"), sort_keys=True
    )
    return declared.model_copy(update={"tokens": _tokens(as_json)})


def carry_skill(skill: SkillInput) -> tuple[Skill, str]:
    """A skill's metadata and its line of the ``<skills>`` section."""
    line = f"- {skill.name}" + (f": {skill.description}" if skill.description else "")
    if skill.path:
        line += f" ({skill.path})"
    carried = Skill(
        name=skill.name, description=skill.description, path=skill.path, tokens=_tokens(line)
    )
    return carried, line


def entry_text(entry: TranscriptEntryInput | TranscriptEntry) -> str:
    """The text a transcript entry becomes in the messages: tool results are text too."""
    if entry.role is not TranscriptRole.TOOL:
        return entry.text
    tool = f' tool="{_attr(entry.tool_name)}"' if entry.tool_name else ""
    return f"<tool_result{tool}>\n{_body(entry.text) or '(no output)'}\n</tool_result>"


def omitted_note(count: int) -> str:
    """The marker that opens the messages when earlier entries are not carried."""
    return f"[{plural(count, 'earlier transcript entry', 'earlier transcript entries')} omitted]"


ASSISTANT_FIRST_NOTE = "[the transcript starts with an assistant turn]"


def lower_messages(
    entries: Sequence[TranscriptEntry], omitted: int, user_turn: str
) -> list[dict[str, Any]]:
    """The conversation as Anthropic messages: user and assistant turns alternate (consecutive
    entries of one role are merged, each a text block), tool results are user text, the first
    message is a user one, and the user turn comes last."""
    blocks: list[tuple[str, str]] = []
    if omitted:
        blocks.append(("user", omitted_note(omitted)))
    for entry in entries:
        role = "assistant" if entry.role is TranscriptRole.ASSISTANT else "user"
        blocks.append((role, entry_text(entry)))
    blocks.append(("user", user_turn))
    if blocks[0][0] == "assistant":
        blocks.insert(0, ("user", ASSISTANT_FIRST_NOTE))
    messages: list[dict[str, Any]] = []
    for role, text in blocks:
        block = {"type": "text", "text": text}
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})
    return messages


def message_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """Estimated tokens of the messages: the sum over their text blocks."""
    return sum(_tokens(block["text"]) for message in messages for block in message["content"])


# -- the memory section ---------------------------------------------------------------------------


def coverage_note(bundle: ContextBundle) -> str:
    """What memory does not cover, for the model, in the question's words (its terms for a
    bundle that carries no words)."""
    uncovered = bundle.uncovered_words or bundle.uncovered_terms
    if uncovered:
        return (
            f"Coverage note: evidence coverage {bundle.evidence_coverage:.3f}; not covered by "
            f"memory: {', '.join(uncovered)}. Do not guess what memory does not cover."
        )
    return (
        f"Coverage note: evidence coverage {bundle.evidence_coverage:.3f}; memory mentions every "
        "discriminating term of this turn."
    )


# Why the items are oldest first, as the chronology note says it (None: a bundle that does not
# say why, such as one an older server built).
_ORDER_BECAUSE: dict[OrderReason | None, str] = {
    OrderReason.QUESTION_ASKS_ORDER: "this turn asks about order, so ",
    OrderReason.EVIDENCE_SPANS_DAYS: "the evidence spans several days, so ",
    None: "",
}


def chronology_note(bundle: ContextBundle) -> str:
    """How the items are ordered, and why, for the model."""
    if bundle.chronological:
        return (
            f"Chronology note: {_ORDER_BECAUSE[bundle.order_reason]}the items are oldest first, "
            "each prefixed with its date ([YYYY-MM-DD], or [undated])."
        )
    return (
        "Chronology note: the items are in order of relevance, not time; do not infer order "
        "from their position."
    )


def _memory(as_of: AsOf | None) -> str:
    """How the memory section names memory: with the past it answers from, if any."""
    return "Memory" if as_of is None else f"Memory {as_of_phrase(as_of)}"


def _nothing_header(as_of: AsOf | None) -> str:
    return f"{_memory(as_of)} holds nothing that matches this turn."


def _skipped_header(top_score: float, min_score: float, as_of: AsOf | None = None) -> str:
    return (
        f"{_memory(as_of)} has no confident answer for this turn (top score {top_score:.3f} is "
        f"below the minimum {min_score:.3f}); it offers nothing."
    )


def _offer_header(
    count: int, chronological: bool, used: int, budget: int, as_of: AsOf | None = None
) -> str:
    order = "oldest first" if chronological else "best match first"
    return (
        f"{_memory(as_of)} offers {plural(count, 'item', 'items')} for this turn ({order}; "
        f"{used} of {budget} tokens)."
    )


def memory_header(bundle: ContextBundle) -> str:
    """The first line of the memory section (it says the past memory answers from, if any)."""
    if not bundle.capsules and not bundle.excluded:
        return _nothing_header(bundle.as_of)
    if bundle.skipped:
        return _skipped_header(bundle.top_score, bundle.min_score, bundle.as_of)
    return _offer_header(
        len(bundle.capsules),
        bundle.chronological,
        bundle.used_tokens,
        bundle.budget_tokens,
        bundle.as_of,
    )


VALIDITY_NOTE = (
    "Validity note: an item marked [until <date>, superseded] or [until <date>, expired] was "
    "true only until then, and one marked [from <date>, not yet true] is not true yet; the "
    "unmarked items are true {when}."
)


def validity_note(bundle: ContextBundle) -> str | None:
    """What the marks on items that are not true at the bundle's instant mean, for the model;
    None when every item is true then."""
    if all(c.validity is Validity.CURRENT for c in bundle.capsules):
        return None
    when = "now" if bundle.as_of is None else as_of_phrase(bundle.as_of)
    return VALIDITY_NOTE.format(when=when)


def render_memory(bundle: ContextBundle | None, note: str) -> str:
    """The ``<memory>`` section: a header, one line per capsule, the coverage note, the
    chronology note and, when an item is marked as not true then, the validity note; or, when
    memory was not consulted, ``note`` saying why."""
    if bundle is None:
        return _section("memory", note)
    lines = [memory_header(bundle)]
    lines += [f"- {capsule.text}" for capsule in bundle.capsules]
    lines += [coverage_note(bundle), chronology_note(bundle)]
    if (validity := validity_note(bundle)) is not None:
        lines.append(validity)
    return _section("memory", "\n".join(lines))


def memory_reserve(query: str, max_capsules: int, budget: int, as_of: AsOf | None = None) -> int:
    """The most tokens the memory section can take beyond its capsules' own tokens, for a bundle
    of at most ``max_capsules`` capsules and at most ``budget`` tokens recalled for ``query``
    (as of ``as_of``, which its header names).

    The section is its frame (tags, header, coverage, chronology and validity notes) plus one
    line per capsule. The frame is measured at its longest: the widest header, the coverage note
    naming every word of the query or none (the uncovered words are some of the query's words),
    every order the bundle may take (oldest first because the question asks about order when it
    does, else best match first or oldest first because the evidence spans days, which depends
    on the memories found), and the validity note (present when an item is not true then). A
    capsule line adds 3 characters ("- " and a newline) to the capsule's text, at most one
    token, and a capsule's ``tokens`` are at least its text's. Since
    ``ceil((a + b) / 4) <= ceil(a / 4) + ceil(b / 4)``, a section whose capsules fit
    ``budget - reserve`` never costs more than ``budget``.
    """
    pairs = query_words(query)
    if asks_about_order(query):
        orders: tuple[OrderReason | None, ...] = (OrderReason.QUESTION_ASKS_ORDER, None)
    else:
        orders = (None, OrderReason.EVIDENCE_SPANS_DAYS)
    bundle = ContextBundle(
        query=query,
        stage="default",
        budget_tokens=budget,
        min_score=1.0,
        used_tokens=budget,
        capsules=(),
        excluded=(),
        skipped=False,
        top_score=1.0,
        evidence_coverage=1.0,
        uncovered_terms=tuple(term for term, _ in pairs),
        uncovered_words=tuple(word for _, word in pairs),
        chronological=False,
        rendered="",
        as_of=as_of,
    )
    variants = [
        bundle.model_copy(update={"chronological": reason is not None, "order_reason": reason})
        for reason in orders
    ]
    variants += [
        variant.model_copy(update={"uncovered_terms": (), "uncovered_words": ()})
        for variant in variants
    ]
    header = max(
        *(
            len(_offer_header(count, reason is not None, budget, budget, as_of))
            for reason in orders
            for count in (max_capsules, 0)
        ),
        len(_skipped_header(1.0, 1.0, as_of)),
        len(_nothing_header(as_of)),
    )
    when = "now" if as_of is None else as_of_phrase(as_of)
    note = len(VALIDITY_NOTE.format(when=when)) + 1  # and its newline
    frame = (
        header
        + note
        + max(len(render_memory(variant, "")) - len(memory_header(variant)) for variant in variants)
    )
    return -(-frame // CHARS_PER_TOKEN) + max_capsules


def not_consulted_note(reason: str) -> str:
    """The memory section when memory was not consulted."""
    return f"Memory was not consulted for this turn: {reason}."


# -- planning and finishing ----------------------------------------------------------------------


def _as_of(request: PromptInput) -> AsOf | None:
    """The past the request's memory is recalled as of (the bundle's ``asOf``), if any."""
    if request.memory_as_of is None:
        return None
    return AsOf(at=request.memory_as_of, mode=request.memory_as_of_mode or AsOfMode.VALID)


@dataclass(frozen=True)
class PromptPlan:
    """Everything but the memory, and the memory's budget. Made by :func:`plan_prompt`."""

    request: PromptInput
    window: Window
    fragments: tuple[PromptFragment, ...]
    environment: PromptEnvironment
    project_context: tuple[ContextFile, ...]
    tools: tuple[Tool, ...]
    skills: tuple[Skill, ...]
    transcript_tail: tuple[TranscriptEntry, ...]
    before_tail: int
    sections: tuple[str, ...]
    base_tokens: int
    memory_query: str
    memory_budget: int
    bundle_budget: int
    memory_note: str

    @property
    def kept_entries(self) -> tuple[TranscriptEntry, ...]:
        return tuple(e for e in self.transcript_tail if e.visibility is not Visibility.DROPPED)

    @property
    def omitted_entries(self) -> int:
        return len(self.transcript_tail) - len(self.kept_entries) + self.before_tail


def plan_prompt(
    request: PromptInput, window: Window, today: dt.date, *, max_query_chars: int
) -> PromptPlan:
    """Carry the caller's parts, render every section but memory, and budget the memory.

    Transcript: the last ``max_transcript_entries`` entries; when even the parts without memory
    do not fit the available input, the oldest of them are dropped (``DROPPED``) until they do
    (the user turn is never dropped). Memory gets ``min(share * available input, maxMemoryTokens,
    what is left)``; its capsules get that minus :func:`memory_reserve`, and memory is not
    consulted when nothing would be left for them.
    """
    fragments = [carry_fragment(f) for f in request.fragments]
    environment = carry_environment(request.environment, today)
    unchanged = (
        request.previous_hashes()
        if request.history_reuse is HistoryReuse.AVAILABLE
        else frozenset()
    )
    files = [
        carry_file(f, cap_tokens=window.max_context_file_tokens, unchanged=unchanged)
        for f in request.project_context
    ]
    skills = [carry_skill(s) for s in request.available_skills]
    tools = tuple(carry_tool(t) for t in request.tool_catalog)
    sections = (
        _section("fragments", "\n".join(block for _, block in fragments)) if fragments else "",
        render_environment(environment),
        _section("project_context", "\n".join(block for _, block in files)) if files else "",
        _section("skills", "\n".join(line for _, line in skills)) if skills else "",
    )
    base_system = render_system(sections)
    system_tokens = _tokens(base_system + "\n\n") if base_system else 0
    tool_tokens = sum(t.tokens for t in tools)

    n = window.max_transcript_entries
    tail_inputs = request.transcript[-n:] if n else ()
    first = len(request.transcript) - len(tail_inputs)
    tail = [
        TranscriptEntry(
            index=first + i,
            role=e.role,
            text=e.text,
            tool_name=e.tool_name,
            tokens=_tokens(entry_text(e)),
            visibility=Visibility.FULL,
        )
        for i, e in enumerate(tail_inputs)
    ]
    available = window.available_input_tokens

    def base_with(dropped: int) -> int:
        kept = tail[dropped:]
        messages = lower_messages(kept, first + dropped, request.user_turn)
        return system_tokens + tool_tokens + message_tokens(messages)

    dropped = 0
    base = base_with(0)
    while base > available and dropped < len(tail):
        dropped += 1
        base = base_with(dropped)
    tail = [
        e.model_copy(update={"visibility": Visibility.DROPPED}) if i < dropped else e
        for i, e in enumerate(tail)
    ]

    query = request.memory_query or request.user_turn[:max_query_chars]
    room = max(0, available - base)
    budget = min(int(window.memory_budget_share * available), window.max_memory_tokens, room)
    reserve = memory_reserve(query, window.max_capsules, budget, _as_of(request))
    bundle_budget = budget - reserve
    note = ""
    if window.memory_budget_share == 0.0:
        note = not_consulted_note("memoryBudgetShare is 0")
    elif bundle_budget < 1:
        note = not_consulted_note(
            f"no room: {room} of {available} input tokens are left, and the memory section "
            f"needs more than {reserve}"
        )
    if note:
        budget = bundle_budget = 0
    return PromptPlan(
        request=request,
        window=window,
        fragments=tuple(f for f, _ in fragments),
        environment=environment,
        project_context=tuple(f for f, _ in files),
        tools=tools,
        skills=tuple(s for s, _ in skills),
        transcript_tail=tuple(tail),
        before_tail=first,
        sections=sections,
        base_tokens=base,
        memory_query=query,
        memory_budget=budget,
        bundle_budget=bundle_budget,
        memory_note=note,
    )


def _ledger_items(plan: PromptPlan, memory: ContextBundle | None) -> list[LedgerItem]:
    def item(section: str, name: str, tokens: int, visibility: Visibility) -> LedgerItem:
        return LedgerItem(section=section, name=name, tokens=tokens, visibility=visibility)

    full = Visibility.FULL
    items = [item("fragments", f.name, f.tokens, full) for f in plan.fragments]
    items.append(item("environment", "environment", _tokens(plan.sections[1]), full))
    items += [item("project_context", f.path, f.tokens, f.visibility) for f in plan.project_context]
    items += [item("skills", s.name, s.tokens, full) for s in plan.skills]
    if memory is not None:
        items += [item("memory", str(c.memory_id), c.tokens, full) for c in memory.capsules]
    frame = render_memory(
        None if memory is None else memory.model_copy(update={"capsules": ()}), plan.memory_note
    )
    items.append(item("memory", "header and notes", _tokens(frame), full))
    items += [item("tools", t.name, t.tokens, full) for t in plan.tools]
    items += [
        item("transcript", f"{e.role.value.lower()} #{e.index}", e.tokens, e.visibility)
        for e in plan.transcript_tail
    ]
    items.append(item("user_turn", "user turn", _tokens(plan.request.user_turn), full))
    return items


def finish_prompt(plan: PromptPlan, memory: ContextBundle | None) -> PromptBundle:
    """Render the memory section, the system prompt and the messages, and close the ledger."""
    request = plan.request
    memory_section = render_memory(memory, plan.memory_note)
    rendered = render_system((*plan.sections, memory_section))
    messages = lower_messages(plan.kept_entries, plan.omitted_entries, request.user_turn)
    body: dict[str, Any] = {"system": rendered, "messages": messages}
    if plan.tools:
        body["tools"] = [tool_definition(t) for t in plan.tools]
    system_tokens = _tokens(rendered)
    msg_tokens = message_tokens(messages)
    tool_tokens = sum(t.tokens for t in plan.tools)
    estimated = system_tokens + msg_tokens + tool_tokens
    available = plan.window.available_input_tokens
    ledger = ContextLedger(
        context_window=plan.window.context_window,
        reserved_completion_tokens=plan.window.reserved_completion_tokens,
        available_input_tokens=available,
        estimated_input_tokens=estimated,
        remaining_tokens=max(0, available - estimated),
        overflow_tokens=max(0, estimated - available),
        fits=estimated <= available,
        system_tokens=system_tokens,
        message_tokens=msg_tokens,
        tool_tokens=tool_tokens,
        memory_budget_tokens=plan.memory_budget,
        memory_tokens=_tokens(memory_section),
        items=tuple(_ledger_items(plan, memory)),
    )
    return PromptBundle(
        fragments=plan.fragments,
        environment=plan.environment,
        project_context=plan.project_context,
        tool_catalog=plan.tools,
        available_skills=plan.skills,
        transcript_tail=plan.transcript_tail,
        omitted_transcript_entries=plan.omitted_entries,
        user_turn=request.user_turn,
        memory=memory,
        memory_note=plan.memory_note,
        history_reuse=request.history_reuse,
        prev_context_hash=request.prev_context_hash,
        prev_context_hashes=request.prev_context_hashes,
        context_ledger=ledger,
        rendered=rendered,
        rendered_hash=sha256_hex(rendered),
        messages=body,
        run_id=request.run_id,
        step=request.step,
    )


__all__ = [
    "PromptPlan",
    "Window",
    "finish_prompt",
    "lower_messages",
    "memory_reserve",
    "plan_prompt",
    "plural",
    "render_memory",
    "resolve_window",
    "sha256_hex",
]
