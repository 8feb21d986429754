"""Prompt assembly's pure functions: resolve the window, plan a prompt (carry the caller's parts,
fit the transcript, budget the memory) and finish it (render the memory section, lower the prompt
to messages, close the ledger).

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
these functions take and give is in :mod:`graphsvc.prompt.models`; each part is carried and
costed by :mod:`graphsvc.prompt.parts`, and the memory section is rendered and reserved for by
:mod:`graphsvc.prompt.memory_section`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import AsOf, AsOfMode, ContextBundle
from graphsvc.prompt.memory_section import memory_reserve, not_consulted_note, render_memory
from graphsvc.prompt.models import (
    ContextFile,
    ContextLedger,
    HistoryReuse,
    LedgerItem,
    PromptBundle,
    PromptDefaults,
    PromptEnvironment,
    PromptFragment,
    PromptInput,
    Skill,
    Tool,
    TranscriptEntry,
    Visibility,
)
from graphsvc.prompt.parts import (
    carry_environment,
    carry_file,
    carry_fragment,
    carry_skill,
    carry_tool,
    entry_text,
    lower_messages,
    message_tokens,
    render_environment,
    section,
    sha256_hex,
    text_tokens,
    tool_definition,
)
from graphsvc.recall import get_stage


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


def _fit_transcript(
    request: PromptInput, window: Window, fixed_tokens: int
) -> tuple[list[TranscriptEntry], int, int]:
    """The transcript's tail as carried, the count of entries before it, and the tokens of the
    prompt without memory (``fixed_tokens`` of system prompt and tools, plus the messages).

    The tail is the last ``max_transcript_entries`` entries; while the prompt without memory does
    not fit the available input, its oldest entries are dropped (``DROPPED``), never the user
    turn.
    """
    n = window.max_transcript_entries
    tail_inputs = request.transcript[-n:] if n else ()
    first = len(request.transcript) - len(tail_inputs)
    tail = [
        TranscriptEntry(
            index=first + i,
            role=e.role,
            text=e.text,
            tool_name=e.tool_name,
            tokens=text_tokens(entry_text(e)),
            visibility=Visibility.FULL,
        )
        for i, e in enumerate(tail_inputs)
    ]
    available = window.available_input_tokens

    def base_with(dropped: int) -> int:
        kept = tail[dropped:]
        messages = lower_messages(kept, first + dropped, request.user_turn)
        return fixed_tokens + message_tokens(messages)

    dropped = 0
    base = base_with(0)
    while base > available and dropped < len(tail):
        dropped += 1
        base = base_with(dropped)
    tail = [
        e.model_copy(update={"visibility": Visibility.DROPPED}) if i < dropped else e
        for i, e in enumerate(tail)
    ]
    return tail, first, base


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
        section("fragments", "\n".join(block for _, block in fragments)) if fragments else "",
        render_environment(environment),
        section("project_context", "\n".join(block for _, block in files)) if files else "",
        section("skills", "\n".join(line for _, line in skills)) if skills else "",
    )
    base_system = render_system(sections)
    system_tokens = text_tokens(base_system + "\n\n") if base_system else 0
    tool_tokens = sum(t.tokens for t in tools)

    tail, first, base = _fit_transcript(request, window, system_tokens + tool_tokens)
    available = window.available_input_tokens

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
    items.append(item("environment", "environment", text_tokens(plan.sections[1]), full))
    items += [item("project_context", f.path, f.tokens, f.visibility) for f in plan.project_context]
    items += [item("skills", s.name, s.tokens, full) for s in plan.skills]
    if memory is not None:
        items += [item("memory", str(c.memory_id), c.tokens, full) for c in memory.capsules]
    frame = render_memory(
        None if memory is None else memory.model_copy(update={"capsules": ()}), plan.memory_note
    )
    items.append(item("memory", "header and notes", text_tokens(frame), full))
    items += [item("tools", t.name, t.tokens, full) for t in plan.tools]
    items += [
        item("transcript", f"{e.role.value.lower()} #{e.index}", e.tokens, e.visibility)
        for e in plan.transcript_tail
    ]
    items.append(item("user_turn", "user turn", text_tokens(plan.request.user_turn), full))
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
    system_tokens = text_tokens(rendered)
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
        memory_tokens=text_tokens(memory_section),
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
    "plan_prompt",
    "render_system",
    "resolve_window",
]
