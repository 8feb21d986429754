"""Prompt assembly (docs/design.md, "Prompt assembly").

An agent does not want memories, it wants a prompt. ``promptBundle`` takes what the caller sends
(prompt fragments, environment, project context files, tool catalog, skill metadata, transcript,
user turn, window settings) and returns a :class:`PromptBundle`: the parts as carried, a memory
:class:`~graphsvc.model.ContextBundle` for the user turn, a :class:`ContextLedger` that accounts
for every token, the system prompt text (``rendered``) and the same prompt lowered to the
Anthropic Messages API shape (``messages``).

Three modules:

- :mod:`graphsvc.prompt.models`: the request, the assembled prompt, the drift report, their enums,
  defaults and limits. Pure data, re-exported here; importing :mod:`graphsvc.prompt` loads nothing
  beyond pydantic and graphsvc's own light modules (the Python client relies on it).
- :mod:`graphsvc.prompt.assembly`: the pure functions that build a prompt (``resolve_window``,
  ``plan_prompt``, ``finish_prompt``, the renderers).
- :mod:`graphsvc.prompt.trace`: the pure functions that summarise the trace
  (``assembled_detail``, ``drift_report``).

The last two need the recall and text-analysis stack (numpy, regex, PyStemmer), so they are
imported from their modules, never from here.
"""

from __future__ import annotations

from graphsvc.prompt.models import (
    AGENT_EVENT_KINDS,
    ENUM_VALUE_DESCRIPTIONS,
    MAX_CONTEXT_WINDOW,
    MAX_TRANSCRIPT_ENTRIES,
    SECTION_ORDER,
    UNCHANGED_MARKER,
    ContextFile,
    ContextFileInput,
    ContextLedger,
    DriftReport,
    DriftStep,
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
    normalise_hash,
    type_description,
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
