"""The ranked window read ahead with the candidates (Store.recall_window), one body over both
stores.

A store whose reads wait on a server (Neo4j) scores the candidates as the ranking will and reads
the best few memories with them, so the window usually needs no round trip of its own; what the
guess missed is read as before. The embedded store ignores the guess. Either way every bundle
and belief is the same bytes: with the guess, with a guess too small to hold the window (the
window then reads the rest), and without one.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from itertools import pairwise

import pytest

import graphsvc.recall.pipeline as pipeline_module
from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.recall import Stage, window_guess
from graphsvc.service import MemoryService
from graphsvc.store.candidates import WindowGuess

TURNS = [
    ("Caroline", "Did you finally adopt the puppy from the shelter last month?"),
    ("Melanie", "Yes, we picked him up in May and he chews every cushion."),
    ("Caroline", "My puppy sleeps on the sofa all day, the puppy snores."),
    ("Melanie", "The shelter asked us to send photos of the puppy every month."),
    ("Caroline", "Which train did you take to Lyon for the pottery fair?"),
    ("Melanie", "The early one; the pottery fair opened at nine."),
    ("Caroline", "I bought two bowls at the pottery fair."),
]
NOTES = [
    "The kettle in the office leaks when it boils.",
    "Descaled the kettle; the filter was cracked.",
    "The office kettle was replaced in March.",
    "Ordered a new kettle filter and a spare lid.",
    "The sofa cushion needs a new cover.",
]
QUERIES = [
    "puppy shelter adopt",
    "what did Melanie say about the puppy",
    "when was the pottery fair",
    "kettle filter office",
    "kettle",
    "cushion sofa cover",
    "nothing matches this",
]


def remember(service: MemoryService, ns: str) -> None:
    """A chat whose turns declare their speakers and PRECEDE each other (the last supersedes the
    one before it), and notes with times, confidences and a supersession of their own."""
    turns = service.remember_many(
        ns, [MemoryInput(text=text, tags=(f"speaker:{who}",)) for who, text in TURNS]
    )
    notes = service.remember_many(
        ns,
        [
            MemoryInput(
                text=text,
                occurred_at=datetime(2024, i + 1, 10 + i, 8, tzinfo=UTC),
                confidence=1.0 - 0.15 * i,
            )
            for i, text in enumerate(NOTES)
        ],
    )
    ids = [m.id for m in turns]
    links = [LinkInput(source=a, target=b, kind=LinkKind.PRECEDES) for a, b in pairwise(ids)]
    links.append(LinkInput(source=ids[-1], target=ids[-2], kind=LinkKind.SUPERSEDES))
    links.append(LinkInput(source=notes[2].id, target=notes[0].id, kind=LinkKind.SUPERSEDES))
    service.link_many(ns, links)


def answers(service: MemoryService, ns: str) -> list[str]:
    out = []
    for query in QUERIES:
        for stage in ("default", "recent", "exact"):
            bundle = service.bundle(ns, query, stage=stage, budget_tokens=60, max_capsules=4)
            out.append(bundle.model_dump_json())
        for k, depth in ((1, 0), (3, 2)):
            out.append(service.reconstruct(ns, query, k=k, depth=depth).model_dump_json())
    return out


@pytest.mark.parametrize("size", ["usual", 1, 0, None], ids=["usual", "one", "zero", "none"])
def test_reading_the_window_ahead_changes_no_answer(
    service: MemoryService, ns: str, monkeypatch: pytest.MonkeyPatch, size: str | int | None
) -> None:
    remember(service, ns)
    # Reconstructs walk early on Neo4j, and then read no window ahead: off here, so that they
    # read ahead as bundles do.
    monkeypatch.setattr(service.store, "overlapped_reads", False)
    # A window smaller than the candidates, so that what the guess leaves out matters.
    policy = service.recall.policy
    narrow = replace(policy, lexical=replace(policy.lexical, ranked_limit=4))
    monkeypatch.setattr(service.recall, "policy", narrow)
    monkeypatch.setattr(pipeline_module, "window_guess", lambda *args: None)
    without = answers(service, ns)

    def sized(stage: Stage, limit: int, bm25_b: float) -> WindowGuess | None:
        usual = window_guess(stage, limit, bm25_b)
        if size is None:
            return None
        return usual if size == "usual" else replace(usual, size=int(size))

    monkeypatch.setattr(pipeline_module, "window_guess", sized)
    assert answers(service, ns) == without
