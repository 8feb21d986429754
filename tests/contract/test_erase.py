"""Erasure at scale: a whole namespace, or every memory of a tag, a source or a time range, with a
receipt; nothing of the erased data is left in an index, a statistic, a belief, an export or an
event; large erases go in batches, each exact, and an interrupted erase is finished by running it
again.

Every test runs on both stores with the same body (the mirror erases in one step, so where a test
counts batches it says what each store does).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.bootstrap import bootstrap
from graphsvc.cli import LazyGroup
from graphsvc.client import GraphsvcClient
from graphsvc.errors import BadInputError
from graphsvc.model import (
    EraseFilter,
    EraseReceipt,
    LinkInput,
    LinkKind,
    Memory,
    MemoryInput,
)
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.candidates import TermStats
from graphsvc.store.mirror import MirrorStore
from graphsvc.store.rules import ERASED
from tests.api_support import context, in_process, run
from tests.helpers import fixed_clock, make_settings
from tests.neo4j_server import neo4j_store_factory

RUN = "erase-run"


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def custom(store: Store, tmp_path: Path, **overrides: object) -> MemoryService:
    return MemoryService(store, make_settings(tmp_path, **overrides), clock=fixed_clock())


ITEMS = [
    MemoryInput(
        text="The kettle whistles every morning",
        tags=("kitchen",),
        source="diary",
        occurred_at=day(2024, 1, 1),
    ),
    MemoryInput(
        text="The toaster burns bread on level five",
        tags=("kitchen", "appliance"),
        source="diary",
        occurred_at=day(2024, 2, 1),
    ),
    MemoryInput(
        text="The garden hose leaks near the tap",
        tags=("garden",),
        source="notes",
        occurred_at=day(2024, 3, 1),
    ),
    MemoryInput(text="Invoice 42 for the kettle was paid late", tags=("billing",), source="mail"),
    MemoryInput(
        text="A quartz zebra figurine stands by the kettle",
        tags=("kitchen",),
        source="notes",
        occurred_at=day(2024, 4, 1),
    ),
]


@dataclass
class Seeded:
    memories: list[Memory]
    links: list[tuple[UUID, UUID, LinkKind]]
    beliefs: dict[UUID, set[UUID]]  # belief -> the memories it used


def seed(service: MemoryService, ns: str) -> Seeded:
    """Five memories (written in a run, so a memory_write event names them all), three links, two
    stored beliefs and two agent events that quote memory ids."""
    memories = service.remember_many(ns, ITEMS, run_id=RUN)
    m = memories
    links = [
        (m[0].id, m[1].id, LinkKind.CAUSES),
        (m[1].id, m[2].id, LinkKind.RELATES_TO),
        (m[2].id, m[3].id, LinkKind.PRECEDES),
    ]
    service.link_many(ns, [LinkInput(source=s, target=t, kind=k) for s, t, k in links])
    beliefs: dict[UUID, set[UUID]] = {}
    for cue in ("kettle whistles morning", "invoice paid late"):
        belief = service.reconstruct_and_store(ns, cue, k=1, depth=0)
        assert belief.belief_id is not None
        beliefs[belief.belief_id] = {*belief.source_ids, *belief.linked_context_ids}
    service.record_event(ns, RUN, 1, "served", f"served {m[1].id} and {m[3].id}")
    service.record_event(ns, RUN, 1, "reread", f"reread {m[2].id}")
    return Seeded(memories, links, beliefs)


def vocabulary(memories: Sequence[Memory]) -> list[str]:
    return sorted({t for memory in memories for t in memory.terms} | {"absentword"})


def check_state(
    service: MemoryService,
    ns: str,
    everyone: Sequence[Memory],
    links: Sequence[tuple[UUID, UUID, LinkKind]],
) -> list[Memory]:
    """The namespace's indexes, statistics and export agree exactly with what is still live of
    ``everyone`` (links: those of ``links`` with both ends live). Returns the live memories."""
    store = service.store
    live = store.get_memories(ns, [m.id for m in everyone])
    live_ids = {m.id for m in live}
    terms = vocabulary(everyone)
    assert store.term_stats(ns, terms) == TermStats(
        n_docs=len(live),
        total_length=sum(len(m.terms) for m in live),
        df={t: sum(1 for m in live if t in m.terms) for t in terms},
    )
    found = {c.id for c in store.candidates(ns, terms, terms)}
    assert found == live_ids
    kept_links = sorted((lk for lk in links if lk[0] in live_ids and lk[1] in live_ids), key=str)
    exported = list(service.export(ns))
    assert [m.id for m in exported if isinstance(m, Memory)] == [
        m.id for m in sorted(live, key=lambda m: (m.recorded_at, str(m.id)))
    ]
    assert (
        sorted(
            ((lk.source, lk.target, lk.kind) for lk in exported if not isinstance(lk, Memory)),
            key=str,
        )
        == kept_links
    )
    stats = service.stats(ns)
    assert stats.memories == len(live)
    assert stats.links == len(kept_links)
    assert stats.terms == len({t for m in live for t in m.terms})
    return live


def assert_events_name_none_of(service: MemoryService, ns: str, erased: Sequence[UUID]) -> None:
    for event in service.events(ns, RUN):
        for mid in erased:
            assert str(mid) not in (event.detail or "")


# -- what an erase refuses ----------------------------------------------------------------------


def test_an_erase_must_say_what_to_erase(service: MemoryService, ns: str) -> None:
    seeded = seed(service, ns)
    cases: list[dict[str, object]] = [
        {},
        {"everything": True, "tag": "kitchen"},
        {"everything": True, "until": day(2024, 1, 1)},
        {"tag": "  "},
        {"source": ""},
        {"since": day(2024, 3, 1), "until": day(2024, 3, 1)},
        {"since": day(2024, 3, 2), "until": day(2024, 3, 1)},
    ]
    for kwargs in cases:
        with pytest.raises(BadInputError) as info:
            service.erase(ns, **kwargs)  # type: ignore[arg-type]
        if not kwargs:
            assert str(info.value).startswith("say what to erase")
    with pytest.raises(BadInputError):
        service.erase("not a namespace", everything=True)
    assert service.stats(ns).memories == len(seeded.memories)


# -- filters ------------------------------------------------------------------------------------


def test_erasing_a_tag_removes_its_memories_links_beliefs_and_every_trace(
    service: MemoryService, ns: str
) -> None:
    seeded = seed(service, ns)
    m = seeded.memories
    erased = [m[0].id, m[1].id, m[4].id]
    gone_beliefs = [b for b, used in seeded.beliefs.items() if used & set(erased)]
    kept_beliefs = [b for b in seeded.beliefs if b not in gone_beliefs]
    assert gone_beliefs and kept_beliefs
    events_before = service.events(ns, RUN)

    receipt = service.erase(ns, tag="kitchen")

    assert receipt.namespace == ns
    assert receipt.filter == EraseFilter(tag="kitchen")
    assert (receipt.memories, receipt.links, receipt.beliefs) == (3, 2, len(gone_beliefs))
    # The memory_write event named all five, the served one m[1]: both rewritten.
    assert receipt.events == 2
    assert receipt.complete
    live = check_state(service, ns, m, seeded.links)
    assert {x.id for x in live} == {m[2].id, m[3].id}
    assert service.store.candidates(ns, ["zebra", "quartz", "toaster"], ["zebra"]) == []
    bundle = service.bundle(ns, "kettle whistles toaster zebra")
    assert {c.memory_id for c in (*bundle.capsules, *bundle.excluded)} <= {m[2].id, m[3].id}
    assert all(service.get_belief(ns, b) is None for b in gone_beliefs)
    assert all(service.get_belief(ns, b) is not None for b in kept_beliefs)
    assert service.stats(ns).beliefs == len(kept_beliefs)
    events = service.events(ns, RUN)
    assert [(e.seq, e.kind, e.step) for e in events] == [
        (e.seq, e.kind, e.step) for e in events_before
    ]
    assert_events_name_none_of(service, ns, erased)
    write = events[0].detail or ""
    assert write.count(ERASED) == 3
    assert str(m[2].id) in write and str(m[3].id) in write
    assert events[1].detail == f"served {ERASED} and {m[3].id}"
    assert events[2].detail == events_before[2].detail  # names a kept memory only

    again = service.erase(ns, tag="kitchen")
    assert (again.memories, again.links, again.beliefs, again.events) == (0, 0, 0, 0)
    assert again.complete


@pytest.mark.parametrize(
    ("kwargs", "erased"),
    [
        ({"source": "diary"}, [0, 1]),
        ({"source": "notes", "tag": "kitchen"}, [4]),  # every filter given must match
        ({"since": day(2024, 1, 15), "until": day(2024, 3, 15)}, [1, 2]),
        ({"until": day(2024, 2, 1)}, [0]),  # until is exclusive
        ({"since": day(2024, 4, 1)}, [3, 4]),  # since inclusive; no occurredAt: recordedAt (2025)
        ({"tag": "appliance", "since": day(2025, 1, 1)}, []),
        ({"tag": "no such tag"}, []),
    ],
)
def test_filters_combine_with_and_over_when(
    service: MemoryService, ns: str, kwargs: dict[str, object], erased: list[int]
) -> None:
    seeded = seed(service, ns)
    m = seeded.memories
    receipt = service.erase(ns, **kwargs)  # type: ignore[arg-type]
    assert receipt.memories == len(erased)
    assert receipt.filter == EraseFilter.model_validate(kwargs)
    live = check_state(service, ns, m, seeded.links)
    assert {x.id for x in live} == {x.id for i, x in enumerate(m) if i not in erased}
    assert_events_name_none_of(service, ns, [m[i].id for i in erased])


def test_erasing_everything_leaves_nothing_of_the_namespace_and_spares_the_others(
    service: MemoryService, ns: str
) -> None:
    other = f"{ns}-b"
    seeded = seed(service, ns)
    theirs = seed(service, other)
    # The same explicit id in both namespaces: ids are per namespace.
    shared = UUID("0b7e55ed-0000-4000-8000-00000000e4a5")
    service.remember(ns, MemoryInput(id=shared, text="mine under a shared id"))
    theirs.memories.append(
        service.remember(other, MemoryInput(id=shared, text="theirs under a shared id"))
    )
    service.record_event(ns, "second-run", 0, "stalled")
    events = len(service.events(ns, RUN)) + 1
    before_other = service.stats(other)

    receipt = service.erase(ns, everything=True)

    assert receipt.filter == EraseFilter(everything=True)
    assert (receipt.memories, receipt.links, receipt.beliefs, receipt.events) == (
        len(seeded.memories) + 1,
        len(seeded.links),
        len(seeded.beliefs),
        events,
    )
    assert receipt.complete
    check_state(service, ns, [*seeded.memories], seeded.links)
    stats = service.stats(ns)
    assert (stats.memories, stats.links, stats.beliefs, stats.terms, stats.events) == (0,) * 5
    assert service.events(ns, RUN) == [] and service.events(ns, "second-run") == []
    assert list(service.export(ns)) == []
    assert service.get_memory(ns, shared) is None
    assert all(service.get_belief(ns, b) is None for b in seeded.beliefs)

    assert service.stats(other) == before_other
    check_state(service, other, theirs.memories, theirs.links)
    kept = service.get_memory(other, shared)
    assert kept is not None and kept.text == "theirs under a shared id"

    # The namespace starts again from nothing: runs count from 0, the shared id is free.
    assert service.record_event(ns, RUN, 0, "served").seq == 0
    assert service.remember(ns, MemoryInput(id=shared, text="a new text")).text == "a new text"
    assert service.erase(ns, everything=True).memories == 1
    service.erase(other, everything=True)  # a shared server keeps no id in two namespaces


def reopened(store: Store, tmp_path: Path, *, compact: bool) -> Store:
    """A new store on the same data: the mirror replays its log (or, after ``compact``, loads
    its snapshot); Neo4j is asked again over a new connection."""
    if isinstance(store, MirrorStore):
        if compact:
            store.snapshot()
        store.close()
        again: Store = MirrorStore(tmp_path / "data", fsync=False)
    else:
        again = neo4j_store_factory()()
    again.open()
    return again


@pytest.mark.parametrize("compact", [False, True])
def test_an_erase_is_durable(store: Store, ns: str, tmp_path: Path, compact: bool) -> None:
    service = custom(store, tmp_path)
    other = f"{ns}-b"
    seeded, theirs = seed(service, ns), seed(service, other)
    service.erase(ns, tag="kitchen")
    service.erase(other, everything=True)
    events = service.events(ns, RUN)
    stats = service.stats(ns)
    again = reopened(store, tmp_path, compact=compact)
    try:
        fresh = custom(again, tmp_path)
        live = check_state(fresh, ns, seeded.memories, seeded.links)
        assert len(live) == 2
        assert fresh.stats(ns) == stats
        assert fresh.events(ns, RUN) == events
        check_state(fresh, other, theirs.memories, theirs.links)
        assert fresh.stats(other).events == 0
    finally:
        again.close()


# -- batches, interruption, resumption --------------------------------------------------------

WORDS = ["amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo"]


def bulk(service: MemoryService, ns: str, count: int, every: int = 3) -> Seeded:
    """``count`` memories, one in ``every`` NOT tagged ``bulk``, chained by links that cross
    batch boundaries, and one belief per ten memories."""
    items = [
        MemoryInput(
            text=f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} item{i} note",
            tags=() if i % every == 0 else ("bulk",),
            occurred_at=day(2024, 1, 1 + i % 28),
        )
        for i in range(count)
    ]
    memories = service.remember_many(ns, items, run_id=RUN)
    links = [(a.id, b.id, LinkKind.PRECEDES) for a, b in itertools.pairwise(memories)] + [
        (memories[i].id, memories[i + 5].id, LinkKind.RELATES_TO) for i in range(count - 5)
    ]
    service.link_many(ns, [LinkInput(source=s, target=t, kind=k) for s, t, k in links])
    beliefs: dict[UUID, set[UUID]] = {}
    for i in range(0, count, 10):
        belief = service.reconstruct_and_store(ns, f"item{i}", k=1, depth=1)
        if belief.belief_id is not None:
            beliefs[belief.belief_id] = {*belief.source_ids, *belief.linked_context_ids}
    return Seeded(memories, links, beliefs)


def expected(seeded: Seeded, erased: set[UUID]) -> tuple[int, int, int]:
    links = sum(1 for s, t, _ in seeded.links if s in erased or t in erased)
    beliefs = sum(1 for used in seeded.beliefs.values() if used & erased)
    return len(erased), links, beliefs


def counts(receipt: EraseReceipt) -> tuple[int, int, int]:
    return receipt.memories, receipt.links, receipt.beliefs


def test_a_large_erase_goes_in_batches_each_exact(store: Store, ns: str, tmp_path: Path) -> None:
    service = custom(store, tmp_path, erase_batch=7)
    seeded = bulk(service, ns, 60)
    erased = {m.id for m in seeded.memories if "bulk" in m.tags}
    seen: list[EraseReceipt] = []

    def progress(so_far: EraseReceipt) -> None:
        # Between batches, everything already agrees with what is left.
        seen.append(so_far)
        check_state(service, ns, seeded.memories, seeded.links)

    receipt = service.erase(ns, tag="bulk", progress=progress)

    assert counts(receipt) == expected(seeded, erased)
    assert receipt.complete
    # ceil(40 / 7) batches, each at most 7 memories (before, the mirror erased in one step).
    batches = -(-len(erased) // 7)
    assert len(seen) == batches
    assert [r.memories for r in seen] == sorted(r.memories for r in seen)
    assert seen[-1].model_copy(update={"complete": True}) == receipt  # in progress: False
    live = check_state(service, ns, seeded.memories, seeded.links)
    assert {m.id for m in live} == {m.id for m in seeded.memories} - erased
    assert_events_name_none_of(service, ns, sorted(erased, key=str))


def test_an_interrupted_erase_leaves_exact_state_and_finishes_when_run_again(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = custom(store, tmp_path, erase_batch=5)
    seeded = bulk(service, ns, 40)
    erased = {m.id for m in seeded.memories if "bulk" in m.tags}
    done: list[EraseReceipt] = []

    def crash(so_far: EraseReceipt) -> None:
        done.append(so_far)
        raise RuntimeError("the process died here")

    with pytest.raises(RuntimeError):
        service.erase(ns, tag="bulk", progress=crash)
    (first,) = done
    assert first.memories == 5  # one batch committed before the crash (both stores)
    live = check_state(service, ns, seeded.memories, seeded.links)
    assert len(live) == len(seeded.memories) - first.memories

    rest = service.erase(ns, tag="bulk")
    assert rest.complete
    assert counts(first.plus(rest)) == expected(seeded, erased)
    live = check_state(service, ns, seeded.memories, seeded.links)
    assert {m.id for m in live} == {m.id for m in seeded.memories} - erased


def test_an_erase_past_its_time_budget_answers_incomplete_and_resumes(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = custom(store, tmp_path, erase_batch=4, erase_time_budget=1e-6)
    seeded = bulk(service, ns, 30)
    receipts = [service.erase(ns, everything=True)]
    while not receipts[-1].complete:
        check_state(service, ns, seeded.memories, seeded.links)
        receipts.append(service.erase(ns, everything=True))
        assert len(receipts) < 100
    if store.kind == "neo4j":
        assert len(receipts) > 30 // 4
    total = receipts[0]
    for more in receipts[1:]:
        total = total.plus(more)
    assert counts(total) == (30, len(seeded.links), len(seeded.beliefs))
    assert total.events == 1  # the run's one memory_write event
    assert (service.stats(ns).memories, service.stats(ns).events) == (0, 0)
    check_state(service, ns, seeded.memories, seeded.links)


def test_a_filtered_erase_past_its_time_budget_answers_incomplete_and_resumes(
    store: Store, ns: str, tmp_path: Path
) -> None:
    # A budget spent at once: each call erases one batch and answers complete=False; calling
    # again finishes it (before, the embedded store erased a filter in one step, past any
    # budget, holding every read for its whole length).
    service = custom(store, tmp_path, erase_batch=4, erase_time_budget=1e-6)
    seeded = bulk(service, ns, 30)
    erased = {m.id for m in seeded.memories if "bulk" in m.tags}
    receipts = [service.erase(ns, tag="bulk")]
    while not receipts[-1].complete:
        assert receipts[-1].memories == 4
        check_state(service, ns, seeded.memories, seeded.links)
        receipts.append(service.erase(ns, tag="bulk"))
        assert len(receipts) < 100
    assert len(receipts) >= len(erased) // 4
    total = receipts[0]
    for more in receipts[1:]:
        total = total.plus(more)
    assert counts(total) == expected(seeded, erased)
    live = check_state(service, ns, seeded.memories, seeded.links)
    assert {m.id for m in live} == {m.id for m in seeded.memories} - erased


def test_reads_are_answered_between_the_batches_of_an_erase(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = custom(store, tmp_path, erase_batch=5)
    seeded = bulk(service, ns, 40)
    erased = {m.id for m in seeded.memories if "bulk" in m.tags}
    kept = next(m for m in seeded.memories if m.id not in erased)
    answered: list[tuple[int, bool]] = []

    def progress(so_far: EraseReceipt) -> None:
        # A read from another thread, while the erase is still going: answered at once.
        if so_far.memories < len(erased) and not answered:
            with ThreadPoolExecutor(1) as pool:
                read = pool.submit(service.get_memory, ns, kept.id)
                answered.append((so_far.memories, read.result(timeout=30) == kept))

    receipt = service.erase(ns, tag="bulk", progress=progress)
    assert receipt.complete and receipt.memories == len(erased)
    assert answered == [(5, True)]  # before: one step, and no receipt until it was all done


# -- a real crash: kill -9 between batches (Neo4j) --------------------------------------------

CRASHER = textwrap.dedent(
    """
    import sys

    from graphsvc.bootstrap import bootstrap
    from graphsvc.settings import Settings

    service = bootstrap(Settings(erase_batch=1))
    def progress(receipt):
        print(receipt.memories, flush=True)
    service.erase(sys.argv[1], tag="bulk", progress=progress)
    """
)


@pytest.mark.neo4j
def test_an_erase_killed_between_batches_is_finished_by_the_next_one(
    tmp_path: Path, ns: str
) -> None:
    store = neo4j_store_factory()()
    if "GRAPHSVC_NEO4J_URI" not in os.environ:
        pytest.skip("the crash test starts a process that reads GRAPHSVC_NEO4J_URI")
    store.open()
    service = custom(store, tmp_path)
    try:
        seeded = bulk(service, ns, 150, every=10)
        erased = {m.id for m in seeded.memories if "bulk" in m.tags}
        with subprocess.Popen(
            [sys.executable, "-c", CRASHER, ns], stdout=subprocess.PIPE, text=True
        ) as child:
            assert child.stdout is not None
            first = child.stdout.readline().strip()  # the first batch is committed
            child.kill()  # SIGKILL, between batches (or in one: its transaction rolls back)
        assert first == "1", first
        live = check_state(service, ns, seeded.memories, seeded.links)
        assert len(seeded.memories) - len(erased) < len(live) < len(seeded.memories)

        rest = service.erase(ns, tag="bulk")
        assert rest.complete
        assert 0 < rest.memories < len(erased)
        live = check_state(service, ns, seeded.memories, seeded.links)
        assert {m.id for m in live} == {m.id for m in seeded.memories} - erased
        assert_events_name_none_of(service, ns, sorted(erased, key=str))
    finally:
        service.erase(ns, everything=True)
        store.close()


# -- the surfaces: GraphQL, the Python client, the command line --------------------------------


def test_the_erase_mutation_needs_a_write_key_and_answers_a_receipt(
    service: MemoryService, ns: str
) -> None:
    seeded = seed(service, ns)
    document = (
        "mutation($in: EraseInput!) { erase(input: $in) { namespace memories links beliefs "
        "events erasedAt complete filter { everything tag source since until } } }"
    )
    reader = run(context(service, ns, role="read"), document, {"in": {"tag": "kitchen"}})
    assert reader.codes == ["FORBIDDEN"]
    writer = context(service, ns)
    empty = run(writer, document, {"in": {}})
    assert empty.codes == ["BAD_INPUT"] and "say what to erase" in empty.messages[0]
    both = run(writer, document, {"in": {"everything": True, "tag": "kitchen"}})
    assert both.codes == ["BAD_INPUT"]
    assert service.stats(ns).memories == len(seeded.memories)

    receipt = run(
        writer, document, {"in": {"since": "2024-01-15T00:00:00", "until": "2024-03-15T00:00:00Z"}}
    ).ok()["erase"]
    assert receipt["namespace"] == ns
    assert (receipt["memories"], receipt["complete"]) == (2, True)
    assert receipt["filter"] == {
        "everything": False,
        "tag": None,
        "source": None,
        "since": "2024-01-15T00:00:00+00:00",
        "until": "2024-03-15T00:00:00+00:00",
    }
    check_state(service, ns, seeded.memories, seeded.links)


def test_the_clients_erase_returns_the_receipt_model(service: MemoryService, ns: str) -> None:
    seeded = seed(service, ns)
    key = "erase-writer-key-000001"
    app = create_app(
        service.settings,
        ApiKeys.parse(f"{key}={ns}:write"),
        open_service=lambda: service,
        owns_store=False,
    )
    with (
        in_process(app) as http,
        GraphsvcClient("http://testserver/graphql", api_key=key, http=http) as client,
    ):
        with pytest.raises(BadInputError):
            client.erase()
        receipt = client.erase(source="diary")
        assert isinstance(receipt, EraseReceipt)
        assert (receipt.namespace, receipt.filter, receipt.memories) == (
            ns,
            EraseFilter(source="diary"),
            2,
        )
        assert client.erase(everything=True).memories == len(seeded.memories) - 2
    assert service.stats(ns).memories == 0


def test_the_erase_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    monkeypatch.setenv("GRAPHSVC_FSYNC", "false")
    group = LazyGroup(name="graphsvc", lazy={"erase": ("graphsvc.cli.erase:erase", "Erase.")})
    runner = CliRunner()
    where = ["--data-dir", str(tmp_path / "data"), "--namespace", "cli"]

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(group, ["erase", *args, *where])
        return result.exit_code, result.output

    service = bootstrap(Settings(data_dir=tmp_path / "data", fsync=False))
    try:
        service.remember_many("cli", ITEMS)
    finally:
        service.close()

    code, output = invoke("--tag", "kitchen")
    assert code == 2 and "add --yes" in output
    code, output = invoke("--yes")
    assert code == 2 and "say what to erase" in output
    code, output = invoke("--since", "yesterday", "--yes")
    assert code == 2 and "ISO-8601" in output
    code, output = invoke("--tag", "kitchen", "--yes")
    assert code == 0, output
    assert "3 memory(ies)" in output
    code, output = invoke("--everything", "--yes", "--json")
    assert code == 0, output
    receipt = json.loads(output)
    assert (receipt["memories"], receipt["complete"], receipt["filter"]["everything"]) == (
        2,
        True,
        True,
    )
