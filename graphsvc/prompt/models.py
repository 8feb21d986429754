"""Prompt assembly's data: the request, the assembled prompt, the drift report, their enums and
the window defaults and limits.

Pure data (pydantic), importing only the standard library, pydantic and graphsvc's own light
modules (:mod:`graphsvc.errors`, :mod:`graphsvc.model`), so that the Python client and anything
else that only carries these shapes stays free of the recall and text-analysis stack. The
functions that build them are in :mod:`graphsvc.prompt.assembly`.

These models are the one source of the GraphQL prompt types: every field's
``Field(description=...)`` is the text of the GraphQL field, the first paragraph of each class's
docstring is the text of the GraphQL type (:func:`type_description`), and
:data:`ENUM_VALUE_DESCRIPTIONS` holds the text of each enum value.
"""

from __future__ import annotations

import datetime as dt
import inspect
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator, model_validator

from graphsvc.model import (
    AsOfMode,
    AwareUtcDateTime,
    ContextBundle,
    ContextEvent,
    ContextEventKind,
    InputModel,
    Model,
)

# -- defaults and limits --------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptDefaults:
    """Window settings used when a request does not give them.

    Attributes:
        context_window: tokens the model reads and writes in all; 200,000 is the window of the
            current Claude models.
        reserved_completion_tokens: kept free for the answer (the request's ``max_tokens``).
        memory_budget_share: the most of the available input that memory may take. A tenth: the
            instructions, files and conversation need the bulk, and a bundle rarely fills even
            that (it also stops at ``maxCapsules``).
        max_transcript_entries: how many of the latest transcript entries are carried.
        max_context_file_tokens: the size cap of one project context file, in estimated tokens
            (4 characters each); longer files are cut and flagged ``truncated``.
    """

    context_window: int = 200_000
    reserved_completion_tokens: int = 8_192
    memory_budget_share: float = 0.10
    max_transcript_entries: int = 20
    max_context_file_tokens: int = 8_000


MAX_CONTEXT_WINDOW = 10_000_000
MAX_TRANSCRIPT_ENTRIES = 1_000
AGENT_EVENT_KINDS: tuple[ContextEventKind, ...] = (
    ContextEventKind.REREAD,
    ContextEventKind.REREAD_REFUSED,
    ContextEventKind.SERVED,
    ContextEventKind.REPLAN,
    ContextEventKind.STALLED,
)
SECTION_ORDER = (
    "fragments",
    "environment",
    "project_context",
    "skills",
    "memory",
    "tools",
    "transcript",
    "user_turn",
)
UNCHANGED_MARKER = "[unchanged since the previous turn: text omitted]"
_HASH_RE = re.compile(r"^[0-9a-f]{64}$")
_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"

Name = Annotated[str, Field(min_length=1, max_length=128)]
Label = Annotated[str, Field(max_length=1024)]


def type_description(cls: type[BaseModel] | type[StrEnum]) -> str:
    """The GraphQL description of a type: the first paragraph of its docstring, on one line.

    Raises:
        ValueError: the class has no docstring (every model here has one).
    """
    doc = inspect.getdoc(cls)
    if not doc:
        raise ValueError(f"{cls.__name__} has no docstring: give it one, it is its description")
    return " ".join(doc.split("\n\n", 1)[0].split())


# -- enums ----------------------------------------------------------------------------------------


class HistoryReuse(StrEnum):
    """Whether the caller's provider keeps the conversation history."""

    AVAILABLE = "AVAILABLE"
    UNAVAILABLE = "UNAVAILABLE"


class TranscriptRole(StrEnum):
    """Who produced a transcript entry."""

    USER = "USER"
    ASSISTANT = "ASSISTANT"
    TOOL = "TOOL"


class Visibility(StrEnum):
    """How much of an item the model sees."""

    FULL = "FULL"
    TRUNCATED = "TRUNCATED"
    UNCHANGED = "UNCHANGED"
    DROPPED = "DROPPED"


# What each value of the prompt enums means (the GraphQL enum values' descriptions).
ENUM_VALUE_DESCRIPTIONS: Mapping[StrEnum, str] = {
    HistoryReuse.AVAILABLE: "The provider caches the history: context files whose sha256 is in "
    "prevContextHash(es) are sent as an 'unchanged' marker instead of their text.",
    HistoryReuse.UNAVAILABLE: "Every context file is sent in full (the default).",
    TranscriptRole.USER: "The user.",
    TranscriptRole.ASSISTANT: "The model.",
    TranscriptRole.TOOL: "A tool's result (sent as user text).",
    Visibility.FULL: "The whole text is in the prompt.",
    Visibility.TRUNCATED: "The text is cut at the size cap (maxContextFileTokens).",
    Visibility.UNCHANGED: "Only an 'unchanged, text omitted' marker: the provider has the text "
    "from the cached history.",
    Visibility.DROPPED: "Left out to fit the context window.",
}


# -- inputs ---------------------------------------------------------------------------------------


class FragmentInput(InputModel):
    """A piece of system prompt (persona, rules, format...)."""

    name: Name = Field(description="A label, 1-128 characters.")
    text: str = Field(description="The text, rendered as sent.")


class EnvironmentInput(InputModel):
    """Where the agent runs; every field optional."""

    cwd: Label | None = Field(default=None, description="Working directory.")
    model: Label | None = Field(default=None, description="Model name.")
    search_mode: Label | None = Field(
        default=None, description="The harness's search mode (free text)."
    )
    date: dt.date | None = Field(default=None, description="Today (default: the server's UTC day).")


class ContextFileInput(InputModel):
    """A project context file such as AGENTS.md."""

    path: Annotated[str, Field(min_length=1, max_length=1024)] = Field(
        description="Its path, 1-1024 characters."
    )
    content: str = Field(description="Its full text.")
    scope: Name = Field(
        default="project", description="Where it applies: project, user, a directory..."
    )


class ToolInput(InputModel):
    """A tool the model may call.

    ``input_schema`` left out (or null) is declared as ``{"type": "object"}``
    (:meth:`declared_schema`); it defaults to None, not to that schema, so that the GraphQL input
    derived from this model prints the default GraphQL clients see (``inputSchema: JSON = null``).
    """

    name: Annotated[str, Field(pattern=_TOOL_NAME)] = Field(
        description="1-64 letters, digits, '_' or '-'; unique."
    )
    description: str = Field(default="", description="What it does.")
    input_schema: dict[str, Any] | None = Field(
        default=None, description='JSON Schema of its input (default {"type": "object"}).'
    )

    def declared_schema(self) -> dict[str, Any]:
        """The input schema as declared to the provider: the caller's, else ``{"type":
        "object"}`` (any object)."""
        return {"type": "object"} if self.input_schema is None else self.input_schema


class SkillInput(InputModel):
    """A skill's metadata (its body stays with the caller)."""

    name: Name = Field(description="The skill's name, 1-128 characters.")
    description: str = Field(default="", description="When to use it.")
    path: Label | None = Field(default=None, description="Where its body is.")


class TranscriptEntryInput(InputModel):
    """One entry of the conversation so far (send oldest first)."""

    role: TranscriptRole = Field(description="USER, ASSISTANT or TOOL.")
    text: str = Field(
        description="The text (not blank for USER and ASSISTANT; an empty tool result is "
        "sent as '(no output)')."
    )
    tool_name: Name | None = Field(default=None, description="The tool, for a TOOL entry.")

    @model_validator(mode="after")
    def _spoken_text_not_blank(self) -> TranscriptEntryInput:
        if self.role is not TranscriptRole.TOOL and not self.text.strip():
            raise ValueError(f"a {self.role.value.lower()} entry needs some text")
        return self


def normalise_hash(value: str) -> str:
    """A sha256 hex digest as :attr:`ContextFile.content_hash` gives it: 64 lowercase hex digits
    (an optional ``sha256:`` prefix and upper case are accepted).

    Raises:
        ValueError: ``value`` is not a sha256 digest (pydantic reports it against the field).
    """
    digest = value.strip().lower().removeprefix("sha256:")
    if not _HASH_RE.match(digest):
        raise ValueError(
            f"{value[:80]!r} is not a sha256 digest: send 64 hex digits (optionally prefixed "
            "'sha256:'), as projectContext[].contentHash gives them"
        )
    return digest


class PromptInput(InputModel):
    """What promptBundle assembles a prompt from. Only userTurn is required. Large inputs belong
    in variables (documents are limited in tokens, not variables).

    Window settings left out take :class:`PromptDefaults` (and the service's bundle defaults).
    ``memory_stage`` is checked against the recall stages by
    :func:`graphsvc.prompt.assembly.resolve_window`, so that this model stays free of the recall
    stack.
    """

    user_turn: str = Field(description="What the user says now (not blank).")
    fragments: tuple[FragmentInput, ...] = Field(
        default=(), description="System prompt fragments, rendered in this order."
    )
    environment: EnvironmentInput | None = Field(default=None, description="Where the agent runs.")
    project_context: tuple[ContextFileInput, ...] = Field(
        default=(), description="Project context files."
    )
    tool_catalog: tuple[ToolInput, ...] = Field(
        default=(), description="Tools, declared in `messages.tools`."
    )
    available_skills: tuple[SkillInput, ...] = Field(default=(), description="Skill metadata.")
    transcript: tuple[TranscriptEntryInput, ...] = Field(
        default=(), description="The conversation so far, oldest first."
    )
    history_reuse: HistoryReuse = Field(
        default=HistoryReuse.UNAVAILABLE, description="Whether the provider keeps the history."
    )
    prev_context_hash: str | None = Field(
        default=None,
        description="With historyReuse AVAILABLE: a context file whose contentHash equals it "
        "is sent as an 'unchanged, text omitted' marker. 64 hex digits ('sha256:' allowed).",
    )
    prev_context_hashes: tuple[str, ...] = Field(
        default=(), description="As prevContextHash, for several files."
    )
    run_id: str | None = Field(
        default=None,
        description="Record the recall and an 'assembled' event for this run (needs a write "
        "key): 1-128 letters, digits, '_', '.', ':' or '-'.",
    )
    step: int = Field(default=0, ge=0, description="The agent's step number (>= 0).")
    context_window: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CONTEXT_WINDOW,
        description="Tokens the model reads and writes (default 200000: "
        "GRAPHSVC_PROMPT_CONTEXT_WINDOW).",
    )
    reserved_completion_tokens: int | None = Field(
        default=None,
        ge=0,
        le=MAX_CONTEXT_WINDOW,
        description="Kept free for the answer (default 8192: "
        "GRAPHSVC_PROMPT_RESERVED_COMPLETION_TOKENS).",
    )
    memory_budget_share: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The most of the available input memory may take, in [0, 1] (default "
        "0.1: GRAPHSVC_PROMPT_MEMORY_BUDGET_SHARE; 0: memory is not consulted).",
    )
    max_memory_tokens: int | None = Field(
        default=None,
        ge=1,
        description="A cap on the memory section's tokens (default and limit: "
        "GRAPHSVC_MAX_BUDGET_TOKENS).",
    )
    max_transcript_entries: int | None = Field(
        default=None,
        ge=0,
        le=MAX_TRANSCRIPT_ENTRIES,
        description="How many of the last transcript entries, 0-1000 (default 20: "
        "GRAPHSVC_PROMPT_TRANSCRIPT_TAIL).",
    )
    max_context_file_tokens: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CONTEXT_WINDOW,
        description="Size cap of one context file in estimated tokens (default 8000: "
        "GRAPHSVC_PROMPT_CONTEXT_FILE_MAX_TOKENS); longer files are cut and flagged `truncated`.",
    )
    memory_query: str | None = Field(
        default=None,
        description="What to recall for (default: the user turn, cut to GRAPHSVC_MAX_TEXT_CHARS).",
    )
    memory_stage: str | None = Field(
        default=None, description="Scoring stage of the recall: default, recent or exact."
    )
    memory_min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Memory abstains when its top score is below this (default: the stage's "
        "threshold; 0 turns abstention off).",
    )
    memory_max_capsules: int | None = Field(
        default=None, ge=1, description="Most capsules (default GRAPHSVC_DEFAULT_MAX_CAPSULES)."
    )
    memory_as_of: AwareUtcDateTime | None = Field(
        default=None,
        description="Recall as of this instant (a time zone is required; default: now).",
    )
    memory_as_of_mode: AsOfMode | None = Field(
        default=None,
        description="With memoryAsOf: KNOWN (what was recorded by then) or VALID (what was "
        "true then; the default).",
    )

    @field_validator("user_turn")
    @classmethod
    def _turn_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the user turn is empty: send what the user said")
        return value

    @field_validator("memory_query")
    @classmethod
    def _query_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("memoryQuery is empty: leave it out to recall for the user turn")
        return value

    @model_validator(mode="after")
    def _mode_needs_instant(self) -> PromptInput:
        if self.memory_as_of is None and self.memory_as_of_mode is not None:
            raise ValueError("memoryAsOfMode needs memoryAsOf: give the instant to recall as of")
        return self

    @field_validator("prev_context_hash")
    @classmethod
    def _one_hash(cls, value: str | None) -> str | None:
        return None if value is None else normalise_hash(value)

    @field_validator("prev_context_hashes")
    @classmethod
    def _hashes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(normalise_hash(v) for v in value))

    @field_validator("tool_catalog")
    @classmethod
    def _unique_tools(cls, value: tuple[ToolInput, ...]) -> tuple[ToolInput, ...]:
        twice = sorted(name for name, n in Counter(t.name for t in value).items() if n > 1)
        if twice:
            raise ValueError(f"tool names must be unique; sent more than once: {', '.join(twice)}")
        return value

    def previous_hashes(self) -> frozenset[str]:
        """Every hash the caller says the provider already has (both fields)."""
        single = () if self.prev_context_hash is None else (self.prev_context_hash,)
        return frozenset((*single, *self.prev_context_hashes))


# -- outputs --------------------------------------------------------------------------------------


class PromptFragment(Model):
    """A prompt fragment as carried, in the caller's order."""

    name: str = Field(description="The caller's label.")
    text: str = Field(description="The text.")
    tokens: int = Field(description="Estimated tokens of its block in the prompt.")


class PromptEnvironment(Model):
    """Where the agent runs, as rendered into the system prompt."""

    cwd: str | None = Field(description="Working directory, when sent.")
    model: str | None = Field(description="Model name, when sent.")
    search_mode: str | None = Field(description="Search mode, when sent.")
    date: dt.date = Field(
        description="The day (never a time, so the prompt stays cache-stable within a day): "
        "the caller's, else the server's UTC day."
    )


class ContextFile(Model):
    """A project context file as carried."""

    path: str = Field(description="The caller's path.")
    scope: str = Field(description="Where it applies (the caller's label).")
    content: str = Field(
        description="The text carried: the caller's, cut at the size cap when `truncated`. "
        "For an UNCHANGED file it is omitted from `rendered` and `messages`."
    )
    content_hash: str = Field(
        description="sha256 of the caller's full content (UTF-8), 64 hex digits: pass it as "
        "prevContextHash next turn when the provider keeps the history."
    )
    truncated: bool = Field(description="True when the text was cut at the cap.")
    visibility: Visibility = Field(description="FULL, TRUNCATED or UNCHANGED.")
    tokens: int = Field(description="Estimated tokens of its block in the prompt.")
    original_tokens: int = Field(description="Estimated tokens of the caller's full content.")


class Tool(Model):
    """A tool, as declared to the provider (in `messages.tools`)."""

    name: str = Field(description="The tool's name.")
    description: str = Field(description="What it does (may be empty).")
    input_schema: dict[str, Any] = Field(description="JSON Schema of its input.")
    tokens: int = Field(description="Estimated tokens of its definition (JSON).")


class Skill(Model):
    """A skill's metadata (never its body)."""

    name: str = Field(description="The skill's name.")
    description: str = Field(description="When to use it (may be empty).")
    path: str | None = Field(description="Where its body is, when sent.")
    tokens: int = Field(description="Estimated tokens of its line in the prompt.")


class TranscriptEntry(Model):
    """One of the last transcript entries."""

    index: int = Field(description="Position in the caller's transcript, from 0.")
    role: TranscriptRole = Field(description="Who produced it.")
    text: str = Field(description="The caller's text.")
    tool_name: str | None = Field(description="The tool, for a tool result.")
    tokens: int = Field(description="Estimated tokens of its text block.")
    visibility: Visibility = Field(description="FULL, or DROPPED when left out to fit the window.")


class LedgerItem(Model):
    """One item of the prompt and what it costs."""

    section: str = Field(
        description="fragments, environment, project_context, skills, memory, tools, "
        "transcript or user_turn."
    )
    name: str = Field(
        description="The fragment name, file path, skill or tool name, memory id, "
        "'<role> #<index>' for a transcript entry, or the part's name."
    )
    tokens: int = Field(
        description="Estimated tokens (for a DROPPED item: what it would have cost)."
    )
    visibility: Visibility = Field(description="How much of it the model sees.")


class ContextLedger(Model):
    """Where the context window goes: every count is graphsvc's estimate and never negative;
    estimatedInputTokens = systemTokens + messageTokens + toolTokens."""

    context_window: int = Field(description="Tokens the model reads and writes.")
    reserved_completion_tokens: int = Field(description="Kept free for the answer.")
    available_input_tokens: int = Field(description="contextWindow - reservedCompletionTokens.")
    estimated_input_tokens: int = Field(
        description="Estimated tokens of the prompt (the assembled event's estTokens)."
    )
    remaining_tokens: int = Field(
        description="availableInputTokens - estimatedInputTokens, or 0 when it does not fit."
    )
    overflow_tokens: int = Field(
        description="How far the estimate is over the available input (0 when it fits)."
    )
    fits: bool = Field(description="True when the estimate is within the input.")
    system_tokens: int = Field(description="Estimated tokens of `rendered`.")
    message_tokens: int = Field(description="Of the messages' text blocks.")
    tool_tokens: int = Field(description="Of the tool definitions (JSON).")
    memory_budget_tokens: int = Field(
        description="The memory section's budget: min(memoryBudgetShare * available input, "
        "maxMemoryTokens, what the rest leaves); 0 when memory was not consulted."
    )
    memory_tokens: int = Field(
        description="Estimated tokens of the memory section (never above its budget)."
    )
    items: tuple[LedgerItem, ...] = Field(description="Every item, in prompt order.")


class PromptBundle(Model):
    """A prompt, assembled: the caller's parts as carried, memory for the user turn, the ledger,
    the system prompt text and the Anthropic-compatible messages."""

    fragments: tuple[PromptFragment, ...] = Field(description="In the caller's order.")
    environment: PromptEnvironment = Field(description="With the day.")
    project_context: tuple[ContextFile, ...] = Field(
        description="Context files with hashes, caps and visibility."
    )
    tool_catalog: tuple[Tool, ...] = Field(description="The tools, in the caller's order.")
    available_skills: tuple[Skill, ...] = Field(description="Skill metadata.")
    transcript_tail: tuple[TranscriptEntry, ...] = Field(
        description="The last maxTranscriptEntries entries (oldest first)."
    )
    omitted_transcript_entries: int = Field(
        description="Entries not in the messages: before the tail, or dropped to fit."
    )
    user_turn: str = Field(description="The user turn (the last message).")
    memory: ContextBundle | None = Field(
        description="What memory offers the user turn, under the ledger's budget; null when "
        "memory was not consulted (`memoryNote` says why)."
    )
    memory_note: str = Field(description="Why memory was not consulted; empty when it was.")
    history_reuse: HistoryReuse = Field(description="As sent.")
    prev_context_hash: str | None = Field(description="As sent, normalised.")
    prev_context_hashes: tuple[str, ...] = Field(description="As sent, normalised.")
    context_ledger: ContextLedger = Field(description="Where the window goes.")
    rendered: str = Field(
        description="The system prompt: deterministic text in delimited sections <fragments>, "
        "<environment>, <project_context>, <skills>, <memory> (with its coverage note and "
        "chronology note), most stable first."
    )
    rendered_hash: str = Field(description="sha256 of `rendered` (UTF-8), hex.")
    messages: dict[str, Any] = Field(
        description="The prompt as an Anthropic Messages request body without model and "
        "max_tokens: {system, messages: [{role, content: [{type: text, text}]}], tools?}. "
        "Turns alternate, the first is a user one, tool results are user text, the user turn "
        "is last."
    )
    run_id: str | None = Field(description="The run, when given.")
    step: int = Field(description="The step.")
    assembled_event: ContextEvent | None = Field(
        default=None,
        description="The 'assembled' event recorded for runId and step; null without runId.",
    )


class DriftStep(Model):
    """Estimated against reported tokens for one step of a run."""

    step: int = Field(description="The step.")
    seq: int = Field(description="Its (latest) assembled event's seq.")
    est_tokens: int | None = Field(description="graphsvc's estimate.")
    reported_tokens: int | None = Field(
        description="What the provider counted (reportTokens); null when unreported."
    )
    ratio: float | None = Field(
        description="reportedTokens / estTokens (6 places); null when unreported."
    )


class DriftReport(Model):
    """How far graphsvc's token estimates are from the provider's counts over a run: per step
    (the latest assembled event of each) and overall."""

    run_id: str = Field(description="The run.")
    steps: tuple[DriftStep, ...] = Field(description="Every assembled step, by step.")
    reported_steps: tuple[int, ...] = Field(description="Steps with a reported count.")
    unreported_steps: tuple[int, ...] = Field(
        description="Steps without one: listed, and left out of the totals and the ratio."
    )
    estimated_tokens: int = Field(description="Sum of estimates, reported steps.")
    reported_tokens: int = Field(description="Sum of reports, reported steps.")
    ratio: float | None = Field(
        description="reportedTokens / estimatedTokens over the reported steps (6 places; above "
        "1: graphsvc underestimates); null when no step is reported."
    )


__all__ = [
    "AGENT_EVENT_KINDS",
    "ENUM_VALUE_DESCRIPTIONS",
    "MAX_CONTEXT_WINDOW",
    "MAX_TRANSCRIPT_ENTRIES",
    "SECTION_ORDER",
    "UNCHANGED_MARKER",
    "ContextFile",
    "ContextFileInput",
    "ContextLedger",
    "DriftReport",
    "DriftStep",
    "EnvironmentInput",
    "FragmentInput",
    "HistoryReuse",
    "LedgerItem",
    "PromptBundle",
    "PromptDefaults",
    "PromptEnvironment",
    "PromptFragment",
    "PromptInput",
    "Skill",
    "SkillInput",
    "Tool",
    "ToolInput",
    "TranscriptEntry",
    "TranscriptEntryInput",
    "TranscriptRole",
    "Visibility",
    "normalise_hash",
    "type_description",
]
