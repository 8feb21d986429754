"""Carrying the caller's parts into a prompt: each fragment, context file, skill and tool
costed and rendered as its block, the environment section, the transcript lowered to Anthropic
messages, and the small text helpers every section shares. Pure functions.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import json
from collections.abc import Sequence
from typing import Any

from graphsvc.prompt.models import (
    UNCHANGED_MARKER,
    ContextFile,
    ContextFileInput,
    EnvironmentInput,
    FragmentInput,
    PromptEnvironment,
    PromptFragment,
    Skill,
    SkillInput,
    Tool,
    ToolInput,
    TranscriptEntry,
    TranscriptEntryInput,
    TranscriptRole,
    Visibility,
)
from graphsvc.text import estimate_tokens

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


def section(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def _body(text: str) -> str:
    """A text inside a block: one trailing newline is left out (the block adds its own)."""
    return text.removesuffix("\n")


def text_tokens(text: str) -> int:
    """Estimated tokens of a text, 0 for no text."""
    return estimate_tokens(text) if text else 0


def carry_fragment(fragment: FragmentInput) -> tuple[PromptFragment, str]:
    """A fragment and its block of the ``<fragments>`` section."""
    block = f'<fragment name="{_attr(fragment.name)}">\n{_body(fragment.text)}\n</fragment>'
    return PromptFragment(name=fragment.name, text=fragment.text, tokens=text_tokens(block)), block


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
    return section("environment", "\n".join(lines))


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
        tokens=text_tokens(block),
        original_tokens=text_tokens(file.content),
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
    return declared.model_copy(update={"tokens": text_tokens(as_json)})


def carry_skill(skill: SkillInput) -> tuple[Skill, str]:
    """A skill's metadata and its line of the ``<skills>`` section."""
    line = f"- {skill.name}" + (f": {skill.description}" if skill.description else "")
    if skill.path:
        line += f" ({skill.path})"
    carried = Skill(
        name=skill.name, description=skill.description, path=skill.path, tokens=text_tokens(line)
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
    return sum(text_tokens(block["text"]) for message in messages for block in message["content"])


__all__ = [
    "CHARS_PER_TOKEN",
    "carry_environment",
    "carry_file",
    "carry_fragment",
    "carry_skill",
    "carry_tool",
    "entry_text",
    "lower_messages",
    "message_tokens",
    "plural",
    "render_environment",
    "section",
    "sha256_hex",
    "text_tokens",
    "tool_definition",
]
