"""Prompt assembly (docs/design.md, "Prompt assembly").

An agent does not want memories, it wants a prompt. ``promptBundle`` takes what the caller sends
(prompt fragments, environment, project context files, tool catalog, skill metadata, transcript,
user turn, window settings) and returns a :class:`PromptBundle`: the parts as carried, a memory
:class:`~graphsvc.model.ContextBundle` for the user turn, a :class:`ContextLedger` that accounts
for every token, the system prompt text (``rendered``) and the same prompt lowered to the
Anthropic Messages API shape (``messages``).

Five modules:

- :mod:`graphsvc.prompt.models`: the request, the assembled prompt, the drift report, their enums,
  defaults and limits. Pure data, re-exported here; importing :mod:`graphsvc.prompt` loads nothing
  beyond pydantic and graphsvc's own light modules (the Python client relies on it).
- :mod:`graphsvc.prompt.assembly`: the pure functions that build a prompt (``resolve_window``,
  ``plan_prompt``, ``finish_prompt``).
- :mod:`graphsvc.prompt.parts`: each of the caller's parts carried, costed and rendered as its
  block, and the transcript lowered to messages.
- :mod:`graphsvc.prompt.memory_section`: the ``<memory>`` section, its notes, and the reserve its
  frame takes (``render_memory``, ``memory_reserve``).
- :mod:`graphsvc.prompt.trace`: the pure functions that summarise the trace
  (``assembled_detail``, ``drift_report``).

The last four need the recall and text-analysis stack (numpy, regex, PyStemmer), so they are
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
