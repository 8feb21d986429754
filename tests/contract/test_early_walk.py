"""A reconstruct's walk started early (recall.pipeline.EarlyWalk), one body over both stores.

On a store whose reads wait on a server (Neo4j), reconstruct starts its walk from the lexical
ranking's best k while the ranked window is read, and keeps it when the hits come out the same.
Answers after questions, speaker attribution and supersessions can move a memory into or out of
the best k; then the early walk is dropped. Both ways, and with the early walk off, the belief
is the same bytes. The tests force the early walk on for the embedded store too, so the same
body checks it there.
"""

from __future__ import annotations

import threading
from itertools import pairwise

import pytest

from graphsvc.errors import StoreUnavailableError
from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.recall.pipeline import EarlyWalk
from graphsvc.service import MemoryService
from graphsvc.store.graph import Walk

CHAT = [
    ("Caroline", "Did you finally adopt the puppy from the shelter last month?"),
    ("Melanie", "Yes, we picked him up in May and he chews every cushion."),
    ("Caroline", "My puppy sleeps on the sofa all day."),
    ("Melanie", "The shelter asked us to send photos of the puppy every month."),
    ("Caroline", "Which train did you take to Lyon for the pottery fair?"),
    ("Melanie", "The early one; the pottery fair opened at nine."),
    ("Caroline", "I bought two bowls at the pottery fair."),
]
QUERIES = [
    "puppy shelter adopt",
    "what did Melanie say about the puppy",
    "pottery fair train",
    "Caroline pottery bowls",
    "cushion",
    "nothing matches this",
]


def converse(service: MemoryService, ns: str) -> None:
    """The chat, each turn declaring its speaker and PRECEDING the next; the last turn
    supersedes the one before it (a correction), so supersessions take part too."""
    memories = service.remember_many(
        ns, [MemoryInput(text=text, tags=(f"speaker:{who}",)) for who, text in CHAT]
    )
    ids = [m.id for m in memories]
    links = [LinkInput(source=a, target=b, kind=LinkKind.PRECEDES) for a, b in pairwise(ids)]
    links.append(LinkInput(source=ids[-1], target=ids[-2], kind=LinkKind.SUPERSEDES))
    service.link_many(ns, links)


def beliefs(service: MemoryService, ns: str) -> list[str]:
    return [
        service.reconstruct(ns, query, k=k, depth=depth).model_dump_json()
        for query in QUERIES
        for k in (1, 2, 3)
        for depth in (0, 1, 2)
    ]


def test_an_early_walk_gives_the_same_beliefs_whether_its_guess_holds_or_not(
    service: MemoryService, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    converse(service, ns)
    monkeypatch.setattr(service.store, "overlapped_reads", False)
    without = beliefs(service, ns)

    started: list[bool] = []  # whether the early walk was started (the namespace's odds allowed)
    guesses: list[bool] = []  # whether the guess held
    walks: list[int] = []
    on_thread: list[int] = []  # the threads that called the store's walk, in order
    real_walk = service.store.walk

    def counted_walk(*args: object, **kwargs: object) -> Walk:
        on_thread.append(threading.get_ident())
        return real_walk(*args, **kwargs)  # type: ignore[arg-type]

    real_early = EarlyWalk.walk

    def watched(self: EarlyWalk, starts: list[object]) -> Walk:
        started.append(self._future is not None)
        guesses.append(starts == self._starts)
        before = len(on_thread)
        walk = real_early(self, starts)  # type: ignore[arg-type]
        # The walks this thread asked for once the hits were known (the early one runs on a
        # thread of its own, maybe still now).
        walks.append(on_thread[before:].count(threading.get_ident()))
        return walk

    monkeypatch.setattr(service.store, "walk", counted_walk)
    monkeypatch.setattr(EarlyWalk, "walk", watched)
    monkeypatch.setattr(service.store, "overlapped_reads", True)
    with_early = beliefs(service, ns)

    assert with_early == without
    assert len(guesses) == len(without)  # every reconstruct guessed
    outcomes = set(zip(started, guesses, strict=True))
    assert {(True, True), (True, False)} <= outcomes, "a held and a dropped early walk are run"
    # An early walk whose guess held is the walk (none is asked once the hits are known);
    # otherwise the walk is asked from the hits.
    for early, held, asked in zip(started, guesses, walks, strict=True):
        assert asked == (0 if early and held else 1)


def test_a_failed_early_walk_is_asked_again(
    service: MemoryService, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The early walk's failure is no answer: the walk from the hits is asked as it would have
    been without it (the store's own retries then apply)."""
    converse(service, ns)
    monkeypatch.setattr(service.store, "overlapped_reads", False)
    expected = service.reconstruct(ns, "puppy shelter adopt", k=2, depth=1).model_dump_json()

    real_walk = service.store.walk
    failures = {"left": 1}

    def flaky(*args: object, **kwargs: object) -> Walk:
        if failures["left"]:
            failures["left"] -= 1
            raise StoreUnavailableError("the server went away for a moment")
        return real_walk(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(service.store, "walk", flaky)
    monkeypatch.setattr(service.store, "overlapped_reads", True)
    got = service.reconstruct(ns, "puppy shelter adopt", k=2, depth=1).model_dump_json()
    assert got == expected
    assert failures["left"] == 0
