"""LoCoMo: long two-person conversations, one memory per turn, questions by category.

Category 5 (adversarial) questions are unanswerable: they attribute to one speaker what the other
said. They are the positives of the abstention figures and are left out of the "answerable"
overall rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphsvc_lab.datasets import load_locomo, locomo_rows
from graphsvc_lab.eval.qa import Conversation, Question

CATEGORIES = {
    1: "1 multi-hop",
    2: "2 temporal",
    3: "3 open-domain",
    4: "4 single-hop",
    5: "5 adversarial",
}
UNANSWERABLE = 5
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def normalise_evidence(values: Sequence[str]) -> list[str]:
    """Dialogue ids as the turns name them: ``"D8:6; D9:17"`` -> ``["D8:6", "D9:17"]``,
    ``"D:11:26"`` -> ``["D11:26"]``; anything without a session and a turn (``"D"``) is dropped.
    Order kept, repeats dropped."""
    found: dict[str, None] = {}
    for value in values:
        for session, turn in _EVIDENCE.findall(str(value)):
            found[f"D{int(session)}:{int(turn)}"] = None
    return list(found)


def conversation_of(item: dict[str, Any], index: int, scope: str) -> Conversation:
    """A LoCoMo item as rows (through :func:`graphsvc_lab.datasets.locomo_rows`) and questions."""
    sample = str(item.get("sample_id", index))
    rows = list(locomo_rows(item, sample, scope))
    session = {str(row["source"]): str(row["tags"][0]) for row in rows if row["type"] == "memory"}
    questions = []
    for number, qa in enumerate(item["qa"]):
        category = int(qa["category"])
        evidence = tuple(f"locomo:{sample}:{d}" for d in normalise_evidence(qa.get("evidence", [])))
        questions.append(
            Question(
                qid=f"{sample}#{number}",
                conversation=sample,
                category=CATEGORIES.get(category, str(category)),
                text=str(qa["question"]),
                evidence=evidence,
                answerable=category != UNANSWERABLE,
            )
        )
    return Conversation(sample, rows, questions, session)


def locomo_conversations(path: Path, only: Sequence[str], scope: str) -> list[Conversation]:
    """The conversations of a LoCoMo file; ``only`` keeps those whose index (0-based) or
    ``sample_id`` is listed."""
    items = load_locomo(path)
    chosen = []
    for index, item in enumerate(items):
        names = {str(index), str(item.get("sample_id", index))}
        if not only or names & set(only):
            chosen.append(conversation_of(item, index, scope))
    return chosen


__all__ = ["CATEGORIES", "conversation_of", "locomo_conversations", "normalise_evidence"]
