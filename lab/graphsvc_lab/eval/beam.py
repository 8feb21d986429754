"""BEAM (100K chats): one memory per message, dated at its batch's time anchor, and the probing
questions by ability.

``beam_rows`` is the converter (the BEAM counterpart of
:func:`graphsvc_lab.datasets.locomo_rows`).
Abstention questions are unanswerable (the positives of the abstention figures); knowledge-update
questions also say which messages hold the original and the updated fact.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphsvc_lab.datasets import dataset_id, declared_speaker
from graphsvc_lab.eval.qa import Conversation, Question

UNANSWERABLE = "abstention"
# The generator's trailing "->-> batch,turn" marker on user messages: an annotation, not content.
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
TRUNCATED = " [truncated]"


def parse_beam_anchor(value: str) -> datetime:
    """``"March-15-2024"`` -> an aware UTC datetime."""
    return datetime.strptime(value.strip(), "%B-%d-%Y").replace(tzinfo=UTC)


def beam_rows(
    chat: Sequence[dict[str, Any]], chat_id: str, scope: str = "", max_chars: int = 20_000
) -> Iterator[dict[str, Any]]:
    """One memory per BEAM message: ``"role: content"``, kind ``message``, tags ``batch-<n>`` and
    the declared speaker ``speaker:<role>`` (``user``, ``assistant``), source
    ``beam:<chat>:<message id>``, dated at its batch's time anchor (carried by the batch's first
    message) plus one second per message so that order within a batch survives; then a
    ``PRECEDES`` link from each message to the next one of its batch (a request to its reply), as
    :func:`graphsvc_lab.datasets.locomo_rows` links turns. A message longer than ``max_chars``
    (two of the 100K chats hold runaway generations of 50K-350K characters) is cut to fit, marked
    ``[truncated]``. ``scope`` as for :func:`graphsvc_lab.datasets.locomo_rows`."""
    anchor: datetime | None = None
    links: list[dict[str, Any]] = []
    for batch in chat:
        messages = [m for turn in batch["turns"] for m in turn]
        value = batch.get("time_anchor") or next(
            (m["time_anchor"] for m in messages if m.get("time_anchor")), None
        )
        if value:
            anchor = parse_beam_anchor(value)
        ids = [dataset_id(scope, "beam", chat_id, str(m["id"])) for m in messages]
        links += [
            {"type": "link", "source": a, "target": b, "kind": "PRECEDES", "note": "next message"}
            for a, b in itertools.pairwise(ids)
            if a != b
        ]
        for index, message in enumerate(messages):
            text = f"{message['role']}: {_MARKER.sub('', message['content']).strip()}"
            if len(text) > max_chars:
                text = text[: max_chars - len(TRUNCATED)].rstrip() + TRUNCATED
            yield {
                "type": "memory",
                "id": ids[index],
                "text": text,
                "kind": "message",
                "occurredAt": (anchor + timedelta(seconds=index)).isoformat() if anchor else None,
                "tags": [f"batch-{batch['batch_number']}", *declared_speaker(str(message["role"]))],
                "source": f"beam:{chat_id}:{message['id']}",
            }
    yield from links


def _flatten(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [i for v in value.values() for i in _flatten(v)]
    if isinstance(value, list):
        return [i for v in value for i in _flatten(v)]
    return [] if value is None else [int(value)]


def beam_questions(probing: dict[str, list[dict[str, Any]]], chat_id: str) -> list[Question]:
    """The probing questions of a chat, abilities in name order, questions in file order.
    Evidence is every message id of ``source_chat_ids`` (nested lists and dicts flattened)."""
    questions = []
    for ability in sorted(probing):
        for number, item in enumerate(probing[ability]):
            ids = item.get("source_chat_ids")
            evidence = tuple(dict.fromkeys(f"beam:{chat_id}:{i}" for i in _flatten(ids)))
            original: tuple[str, ...] = ()
            updated: tuple[str, ...] = ()
            if isinstance(ids, dict) and "updated_info" in ids:
                original = tuple(f"beam:{chat_id}:{i}" for i in _flatten(ids.get("original_info")))
                updated = tuple(f"beam:{chat_id}:{i}" for i in _flatten(ids.get("updated_info")))
            questions.append(
                Question(
                    qid=f"{chat_id}#{ability}#{number}",
                    conversation=chat_id,
                    category=ability,
                    text=str(item["question"]),
                    evidence=evidence,
                    answerable=ability != UNANSWERABLE,
                    original=original,
                    updated=updated,
                )
            )
    return questions


def _chat_key(path: Path) -> tuple[int, str]:
    return (int(path.name), path.name) if path.name.isdigit() else (1 << 30, path.name)


def beam_conversations(
    root: Path, only: Sequence[str], scope: str, max_chars: int = 20_000
) -> list[Conversation]:
    """The chats under ``root`` (folders holding ``chat.json``), in numeric order; ``only`` keeps
    the listed folder names."""
    chats = sorted((p.parent for p in root.glob("*/chat.json")), key=_chat_key)
    out = []
    for folder in chats:
        if only and folder.name not in only:
            continue
        chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
        probing_path = folder / "probing_questions" / "probing_questions.json"
        probing = json.loads(probing_path.read_text(encoding="utf-8"))
        rows = list(beam_rows(chat, folder.name, scope, max_chars))
        session = {
            str(row["source"]): str(row["tags"][0]) for row in rows if row["type"] == "memory"
        }
        out.append(Conversation(folder.name, rows, beam_questions(probing, folder.name), session))
    return out


__all__ = ["beam_conversations", "beam_questions", "beam_rows", "parse_beam_anchor"]
