"""The scenario of issue 39, shared by the suites that run it on every surface: Carol led the
search team during 2023 (an interval), Alice leads it from 2024-01-01, and Bob leads it from
2024-06-01, superseding Alice. Each memory is recorded on a day of its own, so that KNOWN reads
(what memory held then) differ from VALID ones (what was true then).

An answer is right when the leader current at its instant is the only one it offers as current:
every other capsule it offers is marked as no longer (or not yet) true, in its fields and in the
text a model reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

QUESTION = "Who leads the search team?"
NAMESPACE = "leaders"
NOW = datetime(2025, 1, 1, tzinfo=UTC)

ALICE_ID = "a11ce000-0000-4000-8000-000000000001"
BOB_ID = "b0b00000-0000-4000-8000-000000000002"
CAROL_ID = "ca201000-0000-4000-8000-000000000003"
NAMES = {ALICE_ID: "Alice", BOB_ID: "Bob", CAROL_ID: "Carol"}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


#: The memories, in the order written, each with the day it was recorded.
MEMORIES: list[dict[str, Any]] = [
    {
        "id": ALICE_ID,
        "text": "Alice leads the search team",
        "kind": "fact",
        "validFrom": "2024-01-01T00:00:00Z",
        "recordedAt": "2024-01-10T09:00:00Z",
    },
    {
        "id": CAROL_ID,
        "text": "Carol led the search team during 2023",
        "kind": "fact",
        "validFrom": "2023-01-01T00:00:00Z",
        "validUntil": "2024-01-01T00:00:00Z",
        "recordedAt": "2024-02-01T09:00:00Z",
    },
    {
        "id": BOB_ID,
        "text": "Bob leads the search team",
        "kind": "fact",
        "validFrom": "2024-06-01T00:00:00Z",
        "recordedAt": "2024-06-01T09:00:00Z",
    },
]
#: Bob supersedes Alice, written when Bob was.
LINK: dict[str, Any] = {
    "source": BOB_ID,
    "target": ALICE_ID,
    "kind": "SUPERSEDES",
    "createdAt": "2024-06-01T09:00:00Z",
}

#: The three past moments every surface is asked at.
MOMENTS = ("2024-01-15T00:00:00Z", "2024-03-11T00:00:00Z", "2024-08-01T00:00:00Z")


@dataclass(frozen=True)
class Expected:
    """What a read at an instant must answer: the current leader, the other leaders it offers
    (marked), each with the mark its text carries."""

    current: str
    marked: dict[str, str]  # leader -> the mark's status word


def expected(moment: str | None, mode: str | None) -> Expected:
    """The answer at ``moment`` (None: now) in ``mode``."""
    if moment is None:  # now: everything, the closed ones marked
        return Expected("Bob", {"Alice": "superseded", "Carol": "expired"})
    when = at(moment)
    if mode == "KNOWN":  # what was recorded by then, marked as it was known then
        if when < at("2024-02-01T09:00:00Z"):
            return Expected("Alice", {})
        if when < at("2024-06-01T09:00:00Z"):
            return Expected("Alice", {"Carol": "expired"})
        return Expected("Bob", {"Alice": "superseded", "Carol": "expired"})
    # VALID: only what was true then
    return Expected("Bob" if when >= at("2024-06-01T00:00:00Z") else "Alice", {})


def jsonl() -> str:
    """The scenario as ``graphsvc import`` reads it (recorded times restored)."""
    rows = [{"type": "memory", **m} for m in MEMORIES] + [{"type": "link", **LINK}]
    return "".join(json.dumps(row) + "\n" for row in rows)


def leader(text: str) -> str | None:
    """Which leader a line or capsule text is about."""
    for name in ("Alice", "Bob", "Carol"):
        if name in text:
            return name
    return None


_MARK = re.compile(r"\[(?:until [0-9T:Z-]+, (superseded|expired)|from [0-9T:Z-]+, not yet true)\]")


def check_rendered(text: str, want: Expected) -> None:
    """The rendered text offers ``want.current`` unmarked, and every other leader it names with
    the expected mark."""
    lines = [line for line in text.splitlines() if line.startswith(("- ", "1. ", "2. ", "3. "))]
    seen: dict[str, str | None] = {}
    for line in lines:
        who = leader(line)
        if who is None:
            continue
        found = _MARK.search(line)
        seen[who] = None if found is None else (found.group(1) or "not yet true")
    assert seen.get(want.current, "missing") is None, (want, text)
    assert {k: v for k, v in seen.items() if k != want.current} == want.marked, (want, text)


def check_capsules(capsules: list[dict[str, Any]], want: Expected) -> None:
    """The capsules (GraphQL/MCP JSON) offer the current leader as CURRENT, and the others with
    the status their mark says."""
    status = {NAMES[c["memoryId"]]: c["validity"] for c in capsules}
    assert status.pop(want.current, None) == "CURRENT", (want, capsules)
    assert status == {k: v.upper() for k, v in want.marked.items()}, (want, capsules)


__all__ = [
    "ALICE_ID",
    "BOB_ID",
    "CAROL_ID",
    "LINK",
    "MEMORIES",
    "MOMENTS",
    "NAMES",
    "NAMESPACE",
    "NOW",
    "QUESTION",
    "Expected",
    "at",
    "check_capsules",
    "check_rendered",
    "expected",
    "jsonl",
    "leader",
]
