"""The contract: behaviour through the service (and the store interface), on every store.

Every test here runs on the mirror and on Neo4j with the same body (the ``store`` and ``service``
fixtures are parametrized); a behaviour tested on one store only is not a behaviour of graphsvc.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from pydantic import ValidationError

from graphsvc.errors import BadInputError, ConflictError, LimitExceededError, NotFoundError
from graphsvc.model import (
    ContextEventKind,
    Link,
    LinkInput,
    LinkKind,
    LinkRef,
    Memory,
    MemoryInput,
)
from graphsvc.recall.answerability import LEXICAL, probability
from graphsvc.service import MemoryService, content_id
from graphsvc.store.base import Store
from graphsvc.store.candidates import Candidate, TermStats
from graphsvc.text import analyse, estimate_tokens
from tests.helpers import fixed_clock, make_settings

BASE = datetime(2025, 1, 1, tzinfo=UTC)
DATED = re.compile(r"^\[\d{4}-\d{2}-\d{2}\] ")
VOCAB = ["boils", "whistles", "leaks", "rusts", "cracked", "descaled", "unplugged"]


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def remember(service: MemoryService, ns: str, text: str, **fields: object) -> Memory:
    return service.remember(ns, MemoryInput(text=text, **fields))  # type: ignore[arg-type]


def link(service: MemoryService, ns: str, source: Memory, target: Memory, kind: LinkKind) -> None:
    service.link(ns, LinkInput(source=source.id, target=target.id, kind=kind))


def custom(store: Store, tmp_path: Path, **overrides: object) -> MemoryService:
    return MemoryService(store, make_settings(tmp_path, **overrides), clock=fixed_clock())


def live_stats(
    service: MemoryService, ns: str, ids: Sequence[UUID], terms: Sequence[str]
) -> TermStats:
    """What exact term statistics must be, computed from the live memories."""
    live = service.store.get_memories(ns, list(ids))
    return TermStats(
        n_docs=len(live),
        total_length=sum(len(m.terms) for m in live),
        df={t: sum(1 for m in live if t in m.terms) for t in terms},
    )


def link_triples(store: Store, ns: str, ids: Sequence[UUID]) -> list[tuple[UUID, UUID, LinkKind]]:
    return [(lk.source, lk.target, lk.kind) for lk in store.links_of(ns, list(ids))]


TEAM = [
    "The billing service stores invoices in PostgreSQL 16 on the db-billing host",
    "Alice prefers dark mode in every editor she uses",
    "The frontend is a React app deployed to Cloudflare Pages",
    "Bob is allergic to peanuts; order lunch without them",
    "Nightly backups of the analytics warehouse run at 02:00 UTC",
    "The on-call rotation changes every Monday at 09:00",
]


def seed_team(service: MemoryService, ns: str) -> list[Memory]:
    return service.remember_many(ns, [MemoryInput(text=t) for t in TEAM])


# -- remember -------------------------------------------------------------------------------------


def test_remember_returns_the_stored_memory(service: MemoryService, ns: str) -> None:
    text = "The build server runs Ubuntu 22.04 and has 64 GB of RAM"
    memory = remember(
        service,
        ns,
        text,
        kind="fact",
        occurred_at=datetime(2024, 3, 1, 12, 30),
        tags=("infra", "ci"),
        source="chat:42",
        confidence=0.8,
    )
    assert memory.namespace == ns
    assert memory.text == text
    assert memory.kind == "fact"
    assert memory.occurred_at == datetime(2024, 3, 1, 12, 30, tzinfo=UTC)  # naive is UTC
    assert memory.tags == ("infra", "ci")
    assert memory.source == "chat:42"
    assert memory.confidence == 0.8
    assert memory.terms == tuple(analyse(text))
    assert memory.tokens == estimate_tokens(text)
    assert memory.recorded_at == BASE  # the fixed clock's first tick
    assert memory.invalidated_at is None
    stored = service.get_memory(ns, memory.id)
    assert stored is not None
    assert stored.to_json_dict() == memory.to_json_dict()


def test_remember_many_returns_memories_in_input_order_with_distinct_recorded_times(
    service: MemoryService, ns: str
) -> None:
    memories = seed_team(service, ns)
    assert [m.text for m in memories] == TEAM
    recorded = [m.recorded_at for m in memories]
    assert recorded == sorted(recorded)
    assert len(set(recorded)) == len(recorded)
    assert service.stats(ns).memories == len(TEAM)


def test_a_retry_with_the_same_id_and_content_is_a_no_op(service: MemoryService, ns: str) -> None:
    item = MemoryInput(id=uuid4(), text="The VPN gateway is vpn.example.org", tags=("net",))
    first = service.remember(ns, item, run_id="run-1")
    again = service.remember(ns, item, run_id="run-1")
    assert again.to_json_dict() == first.to_json_dict()  # recordedAt is the first write's
    assert service.stats(ns).memories == 1
    # Only the write that created something is in the trace.
    assert [e.kind for e in service.events(ns, "run-1")] == [ContextEventKind.MEMORY_WRITE]


def test_the_same_id_with_other_content_conflicts_and_changes_nothing(
    service: MemoryService, ns: str
) -> None:
    mid = uuid4()
    first = service.remember(ns, MemoryInput(id=mid, text="The VPN gateway is vpn.example.org"))
    terms = ["vpn", "gateway", "exampl", "moved"]
    before = service.store.term_stats(ns, terms)
    for changed in (
        MemoryInput(id=mid, text="The VPN gateway moved to vpn2.example.org"),
        MemoryInput(id=mid, text="The VPN gateway is vpn.example.org", kind="fact"),
        MemoryInput(id=mid, text="The VPN gateway is vpn.example.org", confidence=0.5),
    ):
        with pytest.raises(ConflictError):
            service.remember(ns, changed)
    stored = service.get_memory(ns, mid)
    assert stored is not None
    assert stored.to_json_dict() == first.to_json_dict()
    assert service.store.term_stats(ns, terms) == before


def test_ids_are_derived_from_content_when_absent(service: MemoryService, ns: str) -> None:
    item = MemoryInput(text="Carol's birthday is on 12 May", occurred_at=day(2024, 5, 12))
    first = service.remember(ns, item)
    second = service.remember(ns, MemoryInput(text=item.text, occurred_at=item.occurred_at))
    assert first.id == second.id == content_id(ns, item)
    assert service.stats(ns).memories == 1
    other = service.remember(ns, MemoryInput(text=item.text, tags=("family",)))
    assert other.id != first.id
    assert content_id(f"{ns}x", item) != first.id  # the namespace is part of the content


def test_different_content_never_shares_a_derived_id() -> None:
    when = day(2024, 1, 1)
    one = MemoryInput(text="x\x1f" + when.isoformat(), source="s")
    other = MemoryInput(text="x", occurred_at=when, tags=("s\x1f",))
    assert content_id("ns", one) != content_id("ns", other)


def test_remember_many_is_all_or_nothing_on_a_too_long_text(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = custom(store, tmp_path, max_text_chars=60)
    good = MemoryInput(text="A short memory that fits")
    too_long = MemoryInput(text="word " * 20)
    with pytest.raises(LimitExceededError, match="GRAPHSVC_MAX_TEXT_CHARS"):
        service.remember_many(ns, [good, too_long])
    assert service.get_memory(ns, content_id(ns, good)) is None
    assert service.stats(ns).memories == 0
    assert service.store.term_stats(ns, ["short"]) == TermStats(0, 0, {"short": 0})


def test_remember_many_is_all_or_nothing_on_a_conflict(service: MemoryService, ns: str) -> None:
    taken = service.remember(ns, MemoryInput(id=uuid4(), text="Original text"))
    fresh = MemoryInput(text="A brand new memory")
    clash = MemoryInput(id=taken.id, text="Different text under a taken id")
    with pytest.raises(ConflictError):
        service.remember_many(ns, [fresh, clash])
    assert service.get_memory(ns, content_id(ns, fresh)) is None
    assert service.stats(ns).memories == 1


def test_remember_many_refuses_empty_and_oversized_batches(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = custom(store, tmp_path, max_batch=2)
    with pytest.raises(BadInputError):
        service.remember_many(ns, [])
    with pytest.raises(LimitExceededError, match="GRAPHSVC_MAX_BATCH"):
        service.remember_many(ns, [MemoryInput(text=f"memory {i}") for i in range(3)])
    assert service.stats(ns).memories == 0


def test_blank_text_is_refused_at_the_model() -> None:
    with pytest.raises(ValidationError):
        MemoryInput(text="   ")


def test_invalid_namespaces_are_refused(service: MemoryService) -> None:
    for bad in ("", "has space", "x" * 65, "semi;colon"):
        with pytest.raises(BadInputError):
            service.remember(bad, MemoryInput(text="hello there"))


# -- links ----------------------------------------------------------------------------------------


def test_link_returns_the_stored_link_and_relinking_keeps_created_at(
    service: MemoryService, ns: str
) -> None:
    a, b = remember(service, ns, "rain fell"), remember(service, ns, "the match was cancelled")
    first = service.link(
        ns, LinkInput(source=a.id, target=b.id, kind=LinkKind.CAUSES, weight=0.5, note="weather")
    )
    assert (first.source, first.target, first.kind, first.weight, first.note) == (
        a.id,
        b.id,
        LinkKind.CAUSES,
        0.5,
        "weather",
    )
    again = service.link(ns, LinkInput(source=a.id, target=b.id, kind=LinkKind.CAUSES, weight=2))
    assert again.weight == 2.0
    assert again.created_at == first.created_at
    assert link_triples(service.store, ns, [a.id]) == [(a.id, b.id, LinkKind.CAUSES)]


def test_link_needs_both_ends_and_writes_nothing_otherwise(service: MemoryService, ns: str) -> None:
    a, b = remember(service, ns, "first memory"), remember(service, ns, "second memory")
    ghost = uuid4()
    with pytest.raises(NotFoundError):
        service.link(ns, LinkInput(source=a.id, target=ghost, kind=LinkKind.CAUSES))
    with pytest.raises(NotFoundError):
        service.link(ns, LinkInput(source=ghost, target=a.id, kind=LinkKind.CAUSES))
    with pytest.raises(NotFoundError):
        service.link_many(
            ns,
            [
                LinkInput(source=a.id, target=b.id, kind=LinkKind.RELATES_TO),
                LinkInput(source=b.id, target=ghost, kind=LinkKind.RELATES_TO),
            ],
        )
    assert service.store.links_of(ns, [a.id, b.id]) == []
    assert service.stats(ns).links == 0


def test_self_links_are_refused(service: MemoryService, ns: str) -> None:
    a = remember(service, ns, "a lonely memory")
    for kind in LinkKind:
        with pytest.raises(BadInputError, match="itself"):
            service.link(ns, LinkInput(source=a.id, target=a.id, kind=kind))
    assert service.store.links_of(ns, [a.id]) == []


def test_unknown_link_kinds_are_refused_at_the_model() -> None:
    with pytest.raises(ValidationError):
        LinkInput(source=uuid4(), target=uuid4(), kind="LIKES")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        LinkInput(source=uuid4(), target=uuid4(), kind=LinkKind.CAUSES, weight=float("inf"))


def test_supersedes_cycles_are_refused_and_causes_cycles_allowed(
    service: MemoryService, ns: str
) -> None:
    a, b, c, d = (remember(service, ns, f"version {v} of the policy") for v in "abcd")
    link(service, ns, a, b, LinkKind.SUPERSEDES)
    link(service, ns, b, c, LinkKind.SUPERSEDES)
    before = link_triples(service.store, ns, [a.id, b.id, c.id, d.id])
    with pytest.raises(BadInputError, match="cycle"):
        link(service, ns, c, a, LinkKind.SUPERSEDES)
    with pytest.raises(BadInputError, match="cycle"):  # a cycle made inside one batch
        service.link_many(
            ns,
            [
                LinkInput(source=c.id, target=d.id, kind=LinkKind.SUPERSEDES),
                LinkInput(source=d.id, target=c.id, kind=LinkKind.SUPERSEDES),
            ],
        )
    assert link_triples(service.store, ns, [a.id, b.id, c.id, d.id]) == before
    # Other kinds may go round in circles.
    link(service, ns, c, a, LinkKind.CAUSES)
    link(service, ns, a, c, LinkKind.CAUSES)
    link(service, ns, b, a, LinkKind.PRECEDES)
    assert len(service.store.links_of(ns, [a.id])) == 4


# -- forget ---------------------------------------------------------------------------------------


def test_forget_removes_the_memory_its_links_and_its_beliefs(
    service: MemoryService, ns: str
) -> None:
    a = remember(service, ns, "The zeppelin hangar flooded")
    b = remember(service, ns, "The airship tour was cancelled")
    c = remember(service, ns, "Refunds were issued to passengers")
    d = remember(service, ns, "Quarterly revenue dropped in marketing")
    link(service, ns, a, b, LinkKind.CAUSES)
    link(service, ns, c, a, LinkKind.RELATES_TO)
    link(service, ns, b, c, LinkKind.PRECEDES)
    on_a = service.reconstruct_and_store(ns, "zeppelin hangar", depth=0)
    uses_a = service.reconstruct_and_store(ns, "refunds passengers", depth=1)
    unrelated = service.reconstruct_and_store(ns, "quarterly revenue", depth=0)
    assert on_a.source_ids == (a.id,)
    assert a.id in uses_a.linked_context_ids
    assert unrelated.source_ids == (d.id,)
    assert on_a.belief_id and uses_a.belief_id and unrelated.belief_id

    receipt = service.forget(ns, a.id)

    assert receipt.memory_id == a.id
    assert receipt.namespace == ns
    expected_links = sorted(
        [
            LinkRef(source=a.id, target=b.id, kind=LinkKind.CAUSES),
            LinkRef(source=c.id, target=a.id, kind=LinkKind.RELATES_TO),
        ],
        key=lambda r: (str(r.source), str(r.target), r.kind.value),
    )
    assert list(receipt.removed_links) == expected_links
    assert list(receipt.removed_belief_ids) == sorted([on_a.belief_id, uses_a.belief_id], key=str)
    assert service.get_memory(ns, a.id) is None
    assert service.store.get_belief(ns, on_a.belief_id) is None
    assert service.store.get_belief(ns, uses_a.belief_id) is None
    assert service.store.get_belief(ns, unrelated.belief_id) is not None
    assert link_triples(service.store, ns, [a.id, b.id, c.id]) == [(b.id, c.id, LinkKind.PRECEDES)]
    assert service.stats(ns).memories == 3
    assert service.stats(ns).links == 1
    assert service.stats(ns).beliefs == 1
    with pytest.raises(NotFoundError):
        service.forget(ns, a.id)


def test_forget_unknown_id_is_not_found(service: MemoryService, ns: str) -> None:
    remember(service, ns, "something to keep")
    with pytest.raises(NotFoundError):
        service.forget(ns, uuid4())
    assert service.stats(ns).memories == 1


# -- bundle ---------------------------------------------------------------------------------------


def test_bundle_ranks_the_right_memory_first(service: MemoryService, ns: str) -> None:
    memories = seed_team(service, ns)
    bundle = service.bundle(ns, "Which database stores the billing invoices?")
    assert bundle.capsules
    assert bundle.capsules[0].memory_id == memories[0].id
    assert bundle.capsules[0].text == TEAM[0]
    assert set(bundle.capsules[0].matched_terms) == {"databas", "store", "bill", "invoic"} & set(
        memories[0].terms
    )
    assert not bundle.skipped and not bundle.chronological
    # topScore is answerability's probability of the bundle's evidence (lexical recall here),
    # no longer the best capsule's score.
    assert bundle.retrieval == "lexical"
    assert bundle.top_score == probability(bundle.answer_evidence, LEXICAL)
    assert bundle.min_score <= bundle.top_score <= 1.0
    assert bundle.used_tokens == sum(c.tokens for c in bundle.capsules) <= bundle.budget_tokens
    assert "databas" in bundle.uncovered_terms  # no memory says "database"
    assert 0.0 < bundle.evidence_coverage < 1.0
    assert bundle.rendered.splitlines()[1] == f"- {TEAM[0]}"


def test_bundle_abstains_below_min_score(service: MemoryService, ns: str) -> None:
    seed_team(service, ns)
    query = "Does Alice prefer dark mode for the nightly backups, and kubernetes?"
    top = service.bundle(ns, query).top_score
    assert 0.0 < top < 1.0
    bundle = service.bundle(ns, query, min_score=round(top + 0.01, 6))
    assert bundle.skipped
    assert bundle.top_score == top
    assert bundle.capsules == ()
    assert bundle.used_tokens == 0
    assert bundle.excluded
    assert {c.reason for c in bundle.excluded} == {"abstained"}
    assert bundle.evidence_coverage == 0.0
    assert set(bundle.uncovered_terms) >= {"alic", "prefer", "dark", "night", "kubernet"}
    assert bundle.rendered.startswith("Memory has no confident answer")


def test_bundle_over_an_empty_namespace_abstains(service: MemoryService, ns: str) -> None:
    bundle = service.bundle(ns, "anything at all")
    assert bundle.skipped
    assert bundle.capsules == bundle.excluded == ()
    assert bundle.top_score == 0.0


def test_bundle_orders_chronologically_when_the_question_asks_about_order(
    service: MemoryService, ns: str
) -> None:
    events = [
        ("The database migration to PostgreSQL finished", day(2024, 3, 9)),
        ("The database migration was planned in a design review", day(2023, 11, 2)),
        ("The database migration was rolled back once after a lock timeout", day(2024, 1, 20)),
        ("Lunch options near the office", day(2024, 2, 1)),
        ("The office moved to the fifth floor", day(2024, 2, 2)),
    ]
    service.remember_many(ns, [MemoryInput(text=t, occurred_at=when) for t, when in events])
    bundle = service.bundle(ns, "When did the database migration happen?")
    assert bundle.chronological
    assert len(bundle.capsules) == 3
    assert all(DATED.match(c.text) for c in bundle.capsules)
    dates = [c.occurred_at for c in bundle.capsules]
    assert dates == sorted(d for d in dates if d is not None)
    assert [c.text[:12] for c in bundle.capsules] == [
        "[2023-11-02]",
        "[2024-01-20]",
        "[2024-03-09]",
    ]
    assert all(c.tokens == estimate_tokens(c.text) for c in bundle.capsules)
    assert bundle.used_tokens == sum(c.tokens for c in bundle.capsules)
    # Dated on several days: oldest first even without a marker word.
    plain = service.bundle(ns, "Did the database migration happen?")
    assert plain.chronological
    assert [c.memory_id for c in plain.capsules] == [c.memory_id for c in bundle.capsules]
    assert Counter(c.memory_id for c in plain.capsules) == Counter(
        c.memory_id for c in bundle.capsules
    )


def test_bundle_validates_its_arguments(store: Store, ns: str, tmp_path: Path) -> None:
    service = custom(
        store,
        tmp_path,
        default_budget_tokens=100,
        max_budget_tokens=500,
        default_max_capsules=5,
        max_capsules_limit=10,
    )
    remember(service, ns, "something worth finding")
    with pytest.raises(BadInputError):
        service.bundle(ns, "finding", budget_tokens=0)
    with pytest.raises(BadInputError):
        service.bundle(ns, "finding", budget_tokens=-5)
    with pytest.raises(LimitExceededError):
        service.bundle(ns, "finding", budget_tokens=501)
    with pytest.raises(BadInputError):
        service.bundle(ns, "finding", max_capsules=0)
    with pytest.raises(LimitExceededError):
        service.bundle(ns, "finding", max_capsules=11)
    with pytest.raises(BadInputError) as unknown_stage:
        service.bundle(ns, "finding", stage="turbo")
    assert "default" in str(unknown_stage.value)
    for bad_score in (-0.1, 1.5, float("nan")):
        with pytest.raises(BadInputError):
            service.bundle(ns, "finding", min_score=bad_score)
    for empty in ("", "   \n"):
        with pytest.raises(BadInputError):
            service.bundle(ns, empty)
    # The edges of the ranges are accepted.
    assert service.bundle(ns, "finding", budget_tokens=500, max_capsules=10).budget_tokens == 500
    assert service.bundle(ns, "finding", budget_tokens=1, max_capsules=1).budget_tokens == 1


def test_bundle_packs_within_budget_and_cap(service: MemoryService, ns: str) -> None:
    service.remember_many(
        ns, [MemoryInput(text=f"Kettle fact number {w}: the kettle {w}") for w in VOCAB]
    )
    remember(service, ns, "unrelated memory about trains")
    bundle = service.bundle(ns, "kettle", budget_tokens=30, max_capsules=3)
    assert 0 < len(bundle.capsules) <= 3
    assert bundle.used_tokens <= 30
    assert len(bundle.capsules) + len(bundle.excluded) == len(VOCAB)
    assert {c.reason for c in bundle.excluded} <= {"budget", "max_capsules", "duplicate"}


def test_near_duplicate_memories_are_packed_once(service: MemoryService, ns: str) -> None:
    first = remember(service, ns, "The staging password rotates every 30 days", id=uuid4())
    second = remember(service, ns, "The staging password rotates every 30 days.", id=uuid4())
    remember(service, ns, "Production deploys need two approvals")
    bundle = service.bundle(ns, "staging password rotation")
    assert [c.memory_id for c in bundle.capsules] == [second.id]  # newer first on a tie
    assert [(c.memory_id, c.reason) for c in bundle.excluded] == [(first.id, "duplicate")]


def test_a_superseded_memory_ranks_below_its_superseder(service: MemoryService, ns: str) -> None:
    old = remember(service, ns, "office wifi password hunter2", occurred_at=day(2024, 1, 1))
    new = remember(
        service,
        ns,
        "The office wifi password was changed again today to correct-horse-battery-staple "
        "by the IT team after the audit",
        occurred_at=day(2024, 1, 1),
    )
    remember(service, ns, "The office coffee machine is broken", occurred_at=day(2024, 1, 1))
    query = "office wifi password"
    before = service.bundle(ns, query)
    order = [c.memory_id for c in (*before.capsules, *before.excluded)]
    assert order.index(old.id) < order.index(new.id)  # on its own merits, the old one wins
    link(service, ns, new, old, LinkKind.SUPERSEDES)
    after = service.bundle(ns, query)
    order = [c.memory_id for c in (*after.capsules, *after.excluded)]
    assert order.index(new.id) < order.index(old.id)


def test_bundle_with_a_run_records_a_recall_event(service: MemoryService, ns: str) -> None:
    seed_team(service, ns)
    bundle = service.bundle(ns, "billing invoices", run_id="agent-7", step=3)
    [event] = service.events(ns, "agent-7")
    assert event.kind == ContextEventKind.MEMORY_RECALL
    assert event.step == 3
    assert event.seq == 0
    assert event.est_tokens == bundle.used_tokens


def test_a_lone_memory_can_be_recalled(service: MemoryService, ns: str) -> None:
    only = remember(service, ns, "Dana's favourite pizza is margherita")
    bundle = service.bundle(ns, "favourite pizza")
    assert [c.memory_id for c in bundle.capsules] == [only.id]
    assert service.reconstruct(ns, "favourite pizza").source_ids == (only.id,)


# -- term statistics ------------------------------------------------------------------------------


def test_term_statistics_stay_exact_after_writes_forgets_and_evictions(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = custom(store, tmp_path, max_memories_per_namespace=8)
    texts = [
        "apples and pears and apples again",
        "pears grow on trees",
        "the apple tree blossomed",
        "bananas are not trees",
        "cherry trees blossom in spring",
        "spring cleaning of the attic",
        "attic windows leak in spring rain",
        "rain rain rain go away",
    ]
    written = service.remember_many(ns, [MemoryInput(text=t) for t in texts])
    vocabulary = sorted({t for m in written for t in m.terms} | {"zebra"})
    live = [m.id for m in written]

    def check() -> None:
        assert service.store.term_stats(ns, vocabulary) == live_stats(service, ns, live, vocabulary)
        assert service.stats(ns).memories == len(live)

    check()
    for victim in (written[0], written[4]):
        service.forget(ns, victim.id)
        live.remove(victim.id)
        check()
    extra = service.remember_many(
        ns, [MemoryInput(text=t) for t in ("zebra apples", "zebra rain", "zebra attic")]
    )
    live += [m.id for m in extra]
    evicted = [m.id for m in written if m.id in live][: len(live) - 8]
    live = [i for i in live if i not in evicted]
    check()
    assert all(service.get_memory(ns, i) is None for i in evicted)
    assert service.store.term_stats(ns, ["zebra"]).df == {"zebra": 3}


# -- reconstruct ----------------------------------------------------------------------------------


def _chain(service: MemoryService, ns: str) -> list[Memory]:
    texts = [
        "A squirrel chewed through the power cable",
        "The server room lost power",
        "The nightly build did not run",
        "The release slipped by one day",
        "Unrelated note about the holiday party",
    ]
    memories = [
        remember(service, ns, t, occurred_at=day(2024, 5, 1) + timedelta(days=i))
        for i, t in enumerate(texts)
    ]
    for cause, effect in itertools.pairwise(memories[:4]):
        link(service, ns, cause, effect, LinkKind.CAUSES)
    return memories


@pytest.mark.parametrize(("depth", "reach"), [(0, 0), (1, 1), (2, 2), (3, 3), (4, 3)])
def test_reconstruct_walks_breadth_first_up_to_depth(
    service: MemoryService, ns: str, depth: int, reach: int
) -> None:
    a, b, c, d, _ = _chain(service, ns)
    belief = service.reconstruct(ns, "squirrel", k=1, depth=depth)
    assert belief.source_ids == (a.id,)
    assert belief.linked_context_ids == (b.id, c.id, d.id)[:reach]
    assert [m.id for m in belief.memories] == [a.id, b.id, c.id, d.id][: reach + 1]
    assert 0.0 < belief.confidence <= 1.0
    if reach >= 2:
        assert "Causal chains (cause -> effect, oldest first):" in belief.summary
        chain = belief.summary.split("Causal chains (cause -> effect, oldest first):\n")[1]
        assert chain.splitlines()[0] == (
            "- [2024-05-01] A squirrel chewed through the power cable -> "
            "[2024-05-02] The server room lost power"
        )


def test_reconstruct_walks_effects_back_to_causes(service: MemoryService, ns: str) -> None:
    _, b, c, d, _ = _chain(service, ns)
    belief = service.reconstruct(ns, "release slipped", k=1, depth=2)
    assert belief.source_ids == (d.id,)
    assert belief.linked_context_ids == (c.id, b.id)


def test_reconstruct_terminates_on_cycles(service: MemoryService, ns: str) -> None:
    a, b, c, _, _ = _chain(service, ns)
    link(service, ns, c, a, LinkKind.CAUSES)
    link(service, ns, b, a, LinkKind.RELATES_TO)
    belief = service.reconstruct(ns, "squirrel", k=1, depth=4)
    assert belief.source_ids == (a.id,)
    assert len(belief.linked_context_ids) == len(set(belief.linked_context_ids)) == 3


def test_reconstruct_never_lists_a_source_as_linked_context(
    service: MemoryService, ns: str
) -> None:
    a = remember(service, ns, "The kiln overheated during firing")
    b = remember(service, ns, "The kiln cracked the glaze on every pot")
    c = remember(service, ns, "We ordered a new thermocouple")
    remember(service, ns, "The gallery opening is on Friday")
    link(service, ns, a, b, LinkKind.CAUSES)
    link(service, ns, b, c, LinkKind.RELATES_TO)
    belief = service.reconstruct(ns, "kiln", k=5, depth=2)
    assert set(belief.source_ids) == {a.id, b.id}
    assert belief.linked_context_ids == (c.id,)
    assert not set(belief.source_ids) & set(belief.linked_context_ids)
    assert belief.confidence == round(
        sum(service.bundle(ns, "kiln").capsules[i].score for i in range(2)) / 2, 6
    )


def test_reconstruct_caps_the_nodes_a_walk_adds(store: Store, ns: str, tmp_path: Path) -> None:
    service = custom(store, tmp_path, walk_max_nodes=3)
    hub = remember(service, ns, "The hub memory about lighthouses")
    spokes = [remember(service, ns, f"spoke number {w}") for w in VOCAB]
    for spoke in spokes:
        link(service, ns, hub, spoke, LinkKind.RELATES_TO)
    belief = service.reconstruct(ns, "lighthouses", k=1, depth=2)
    assert belief.source_ids == (hub.id,)
    assert list(belief.linked_context_ids) == sorted((s.id for s in spokes), key=str)[:3]


def test_reconstruct_validates_k_depth_and_cue(store: Store, ns: str, tmp_path: Path) -> None:
    service = custom(store, tmp_path, max_k=5, max_depth=3)
    remember(service, ns, "something to reconstruct")
    with pytest.raises(BadInputError):
        service.reconstruct(ns, "something", depth=-1)
    with pytest.raises(LimitExceededError):
        service.reconstruct(ns, "something", depth=4)
    with pytest.raises(BadInputError):
        service.reconstruct(ns, "something", k=0)
    with pytest.raises(LimitExceededError):
        service.reconstruct(ns, "something", k=6)
    with pytest.raises(BadInputError):
        service.reconstruct(ns, "  ")
    assert service.reconstruct(ns, "something", k=5, depth=3).cue == "something"


def test_reconstruct_with_no_hits_says_so(service: MemoryService, ns: str) -> None:
    seed_team(service, ns)
    belief = service.reconstruct(ns, "quantum chromodynamics")
    assert belief.source_ids == belief.linked_context_ids == ()
    assert belief.confidence == 0.0
    assert belief.summary == 'Memory holds nothing that matches "quantum chromodynamics".'


def test_reconstruct_mutation_stores_the_belief_and_records_the_recall(
    service: MemoryService, ns: str
) -> None:
    a, b, *_ = _chain(service, ns)
    belief = service.reconstruct_and_store(ns, "squirrel cable", k=1, depth=1, run_id="run-9")
    assert belief.belief_id is not None
    stored = service.store.get_belief(ns, belief.belief_id)
    assert stored is not None
    assert stored.cue == "squirrel cable"
    assert stored.summary == belief.summary
    assert stored.confidence == belief.confidence
    assert stored.source_ids == belief.source_ids == (a.id,)
    assert stored.linked_context_ids == belief.linked_context_ids == (b.id,)
    assert service.stats(ns).beliefs == 1
    [event] = service.events(ns, "run-9")
    assert event.kind == ContextEventKind.MEMORY_RECALL
    assert event.seq == 0
    assert event.est_tokens == estimate_tokens(belief.summary)
    # The query form stores nothing.
    again = service.reconstruct(ns, "squirrel cable", k=1, depth=1)
    assert again.belief_id is None
    assert again.summary == belief.summary
    assert service.stats(ns).beliefs == 1


def test_reconstruct_mutation_without_hits_stores_no_belief(
    service: MemoryService, ns: str
) -> None:
    seed_team(service, ns)
    belief = service.reconstruct_and_store(ns, "quantum chromodynamics", run_id="run-0")
    assert belief.belief_id is None
    assert service.stats(ns).beliefs == 0
    assert [e.kind for e in service.events(ns, "run-0")] == [ContextEventKind.MEMORY_RECALL]


# -- eviction -------------------------------------------------------------------------------------


def test_the_namespace_cap_evicts_the_oldest(store: Store, ns: str, tmp_path: Path) -> None:
    service = custom(store, tmp_path, max_memories_per_namespace=3)
    m1, m2, m3 = (remember(service, ns, f"memory about {w}") for w in ("owls", "bats", "moths"))
    link(service, ns, m1, m3, LinkKind.CAUSES)
    link(service, ns, m2, m3, LinkKind.RELATES_TO)
    belief = service.reconstruct_and_store(ns, "owls", k=1, depth=0)
    assert belief.belief_id is not None
    m4 = service.remember(ns, MemoryInput(text="memory about larks"), run_id="run-e", step=2)
    assert service.get_memory(ns, m1.id) is None
    assert [m.id for m in service.store.get_memories(ns, [m1.id, m2.id, m3.id, m4.id])] == [
        m2.id,
        m3.id,
        m4.id,
    ]
    assert link_triples(service.store, ns, [m3.id]) == [(m2.id, m3.id, LinkKind.RELATES_TO)]
    assert service.store.get_belief(ns, belief.belief_id) is None
    kinds = [(e.kind, e.step) for e in service.events(ns, "run-e")]
    assert kinds == [(ContextEventKind.MEMORY_WRITE, 2), (ContextEventKind.MEMORY_EVICT, 2)]
    evict = service.events(ns, "run-e")[1]
    assert evict.detail is not None and str(m1.id) in evict.detail
    # A batch evicts as many as it must.
    service.remember_many(ns, [MemoryInput(text=f"memory about {w}") for w in ("cats", "dogs")])
    assert service.store.get_memories(ns, [m2.id, m3.id, m4.id]) == [service.get_memory(ns, m4.id)]
    assert service.stats(ns).memories == 3


def test_a_batch_larger_than_the_cap_is_refused(store: Store, ns: str, tmp_path: Path) -> None:
    service = custom(store, tmp_path, max_memories_per_namespace=2)
    with pytest.raises(LimitExceededError):
        service.remember_many(ns, [MemoryInput(text=f"memory {w}") for w in VOCAB[:3]])
    assert service.stats(ns).memories == 0


def test_eviction_spares_memories_the_batch_resends(store: Store, ns: str, tmp_path: Path) -> None:
    service = custom(store, tmp_path, max_memories_per_namespace=2)
    first = MemoryInput(text="memory about owls")
    remember(service, ns, "memory about owls")
    second = remember(service, ns, "memory about bats")
    written = service.remember_many(ns, [first, MemoryInput(text="memory about moths")])
    assert [m.text for m in written] == ["memory about owls", "memory about moths"]
    assert service.get_memory(ns, second.id) is None


def test_a_write_that_adds_nothing_evicts_down_to_a_lowered_cap(
    store: Store, ns: str, tmp_path: Path
) -> None:
    roomy = custom(store, tmp_path, max_memories_per_namespace=10)
    written = roomy.remember_many(ns, [MemoryInput(text=f"note on bird {n}") for n in range(5)])
    tight = custom(store, tmp_path, max_memories_per_namespace=3)
    _, result = tight.write_memories(ns, [MemoryInput(text="note on bird 0")])  # unchanged
    assert not result.created and result.unchanged == (written[0].id,)
    assert result.evicted == (written[1].id, written[2].id)  # the oldest but the one re-sent
    assert tight.stats(ns).memories == 3
    assert store.term_stats(ns, ["bird"]).df == {"bird": 3}


def test_store_evicts_by_recorded_at_not_by_arrival(store: Store, ns: str) -> None:
    newer = _raw(ns, "memory written first, recorded later", BASE + timedelta(days=30))
    older = _raw(ns, "memory written second, recorded earlier", BASE)
    store.upsert_memories(ns, [newer], max_memories=2)
    store.upsert_memories(ns, [older], max_memories=2)
    result = store.upsert_memories(
        ns, [_raw(ns, "newest memory", BASE + timedelta(days=60))], max_memories=2
    )
    assert result.evicted == (older.id,)


# -- namespaces -----------------------------------------------------------------------------------


def test_namespaces_are_isolated(service: MemoryService, ns: str) -> None:
    other = f"{ns}-b"
    a1, a2 = seed_team(service, ns)[:2]
    link(service, ns, a1, a2, LinkKind.RELATES_TO)
    service.record_event(ns, "shared-run", 0, "served")
    b1 = remember(service, other, "A memory of namespace B about billing")

    assert service.get_memory(other, a1.id) is None
    assert service.get_memory(ns, b1.id) is None
    bundle = service.bundle(other, "billing service invoices PostgreSQL")
    assert [c.memory_id for c in (*bundle.capsules, *bundle.excluded)] == [b1.id]
    assert service.reconstruct(other, "PostgreSQL invoices").source_ids == ()
    with pytest.raises(NotFoundError):
        service.link(other, LinkInput(source=b1.id, target=a1.id, kind=LinkKind.CAUSES))
    with pytest.raises(NotFoundError):
        service.forget(other, a1.id)
    assert service.store.links_of(other, [a1.id, b1.id]) == []
    assert service.events(other, "shared-run") == []
    stats = service.store.term_stats(other, ["bill", "postgresql"])
    assert stats == TermStats(1, len(b1.terms), {"bill": 1, "postgresql": 0})
    assert service.stats(other).memories == 1
    assert service.stats(ns).memories == len(TEAM)


# -- events ---------------------------------------------------------------------------------------


def test_record_event_refuses_unknown_kinds_listing_the_known_ones(
    service: MemoryService, ns: str
) -> None:
    with pytest.raises(BadInputError) as info:
        service.record_event(ns, "run-1", 0, "teleported")
    for kind in ContextEventKind:
        assert kind.value in str(info.value)
    with pytest.raises(BadInputError):
        service.record_event(ns, "run-1", -1, "served")
    with pytest.raises(BadInputError):
        service.record_event(ns, "run id with spaces", 0, "served")
    assert service.events(ns, "run-1") == []


def test_events_come_back_in_order(service: MemoryService, ns: str) -> None:
    plan = [
        (0, "assembled", "prompt v1", 120),
        (0, "served", None, None),
        (1, "reread", "AGENTS.md", 40),
        (1, "replan", "tool failed", None),
        (2, "stalled", None, None),
    ]
    for step, kind, detail, est in plan:
        service.record_event(ns, "run-42", step, kind, detail, est)
    service.record_event(ns, "run-43", 0, "served")
    events = service.events(ns, "run-42")
    assert [e.seq for e in events] == list(range(len(plan)))
    assert [(e.step, e.kind.value, e.detail, e.est_tokens) for e in events] == plan
    assert all(e.run_id == "run-42" and e.reported_tokens is None for e in events)
    times = [e.recorded_at for e in events]
    assert times == sorted(times)
    assert [e.seq for e in service.events(ns, "run-43")] == [0]


# -- the store interface --------------------------------------------------------------------------


def _raw(ns: str, text: str, recorded: datetime, *, mid: UUID | None = None) -> Memory:
    return Memory(
        id=mid or uuid4(),
        namespace=ns,
        text=text,
        kind="note",
        recorded_at=recorded,
        tokens=estimate_tokens(text),
        terms=tuple(analyse(text)),
    )


def test_store_get_memories_keeps_the_asked_order(store: Store, ns: str) -> None:
    memories = [_raw(ns, f"stored memory {w}", BASE) for w in VOCAB[:4]]
    store.upsert_memories(ns, memories, max_memories=100)
    wanted = [memories[2].id, uuid4(), memories[0].id, memories[3].id]
    assert [m.id for m in store.get_memories(ns, wanted)] == [wanted[0], wanted[2], wanted[3]]
    assert store.get_memories(ns, []) == []


def test_store_candidates_and_recent_candidates_have_a_total_order(store: Store, ns: str) -> None:
    memories = [
        _raw(ns, f"kettle memory {w}", BASE + timedelta(seconds=i % 3)) for i, w in enumerate(VOCAB)
    ]
    memories.append(_raw(ns, "no matching term", BASE))
    store.upsert_memories(ns, memories, max_memories=100)
    kettles = memories[:-1]
    found = store.candidates(ns, ["kettl", "zebra"], ["memori", "kettl", "zebra"])
    assert [c.id for c in found] == sorted((m.id for m in kettles), key=str)
    by_id = {m.id: m for m in kettles}
    assert found == [Candidate.of(by_id[c.id], ["memori", "kettl", "zebra"]) for c in found]
    assert all(c.tf[1] == 1 and c.tf[2] == 0 for c in found)
    recent = store.recent_candidates(ns, "kettl", 4, ["kettl"])
    expected = sorted(kettles, key=lambda m: (-m.recorded_at.timestamp(), str(m.id)))[:4]
    assert [c.id for c in recent] == [m.id for m in expected]
    assert store.candidates(ns, [], ["kettl"]) == []
    assert store.recent_candidates(ns, "zebra", 5, ["zebra"]) == []


def test_store_supersessions_and_links_are_sorted(store: Store, ns: str) -> None:
    memories = [_raw(ns, f"policy version {w}", BASE) for w in VOCAB[:4]]
    store.upsert_memories(ns, memories, max_memories=100)
    a, b, c, d = memories
    made = [
        (d, a, LinkKind.SUPERSEDES),
        (b, a, LinkKind.SUPERSEDES),
        (c, b, LinkKind.SUPERSEDES),
        (a, d, LinkKind.CAUSES),
        (a, b, LinkKind.RELATES_TO),
    ]
    store.add_links(
        ns, [Link(source=s.id, target=t.id, kind=k, created_at=BASE) for s, t, k in made]
    )
    pairs = store.supersessions(ns, [a.id, b.id, d.id])
    assert pairs == sorted([(d.id, a.id), (b.id, a.id)], key=lambda p: (str(p[0]), str(p[1])))
    triples = link_triples(store, ns, [a.id])
    assert len(triples) == 5 - 1  # c -> b does not touch a
    assert triples == sorted(triples, key=lambda t: (str(t[0]), str(t[1]), t[2].value))


def test_store_walk_is_sorted_and_bounded(store: Store, ns: str) -> None:
    memories = [_raw(ns, f"node {w}", BASE) for w in VOCAB]
    store.upsert_memories(ns, memories, max_memories=100)
    hub, *rest = memories
    near, far = rest[:4], rest[4:]
    links = [
        Link(source=hub.id, target=m.id, kind=LinkKind.RELATES_TO, created_at=BASE) for m in near
    ]
    links += [
        Link(source=near[0].id, target=m.id, kind=LinkKind.CAUSES, created_at=BASE) for m in far
    ]
    store.add_links(ns, links)
    walk = store.walk(ns, [hub.id], depth=2, max_nodes=50)
    assert [(m.id, d) for m, d in walk.reached] == [
        *((m.id, 1) for m in sorted(near, key=lambda m: str(m.id))),
        *((m.id, 2) for m in sorted(far, key=lambda m: str(m.id))),
    ]
    assert len(walk.links) == len(links)
    keys = [(str(lk.source), str(lk.target), lk.kind.value) for lk in walk.links]
    assert keys == sorted(keys)
    capped = store.walk(ns, [hub.id], depth=2, max_nodes=3)
    assert [(m.id, d) for m, d in capped.reached] == [(m.id, d) for m, d in walk.reached][:3]
    assert store.walk(ns, [hub.id], depth=0, max_nodes=50).reached == ()
    assert store.walk(ns, [uuid4()], depth=2, max_nodes=50).reached == ()


def test_store_next_recorded_follows_recorded_order_then_id(store: Store, ns: str) -> None:
    # Three memories at one instant (ids 1 < 2 < 3, as written by two processes at once), one a
    # second later, one a second before; the order is (recordedAt, id).
    t = BASE + timedelta(hours=1)
    same = [_raw(ns, f"same instant {n}", t, mid=UUID(int=n)) for n in (3, 1, 2)]
    later = _raw(ns, "a second later", t + timedelta(seconds=1), mid=UUID(int=9))
    earlier = _raw(ns, "a second before", t - timedelta(seconds=1), mid=UUID(int=8))
    store.upsert_memories(ns, [later, *same, earlier], max_memories=100)
    asked = [UUID(int=8), UUID(int=1), UUID(int=2), UUID(int=3), UUID(int=9), uuid4()]
    found = store.next_recorded(ns, [*asked, UUID(int=1)])  # a repeat is answered once
    assert [(a.int, m.id.int) for a, m in found] == [(8, 1), (1, 2), (2, 3), (3, 9)]
    assert found[3][1] == later  # the whole memory, as stored
    assert store.next_recorded(ns, []) == []
    assert store.next_recorded("other-ns", asked) == []


def test_a_question_is_followed_by_the_memory_written_after_it_without_links(
    service: MemoryService, ns: str
) -> None:
    """A chat application that writes each turn, without links: the reply that shares no word with
    the query ranks right after the question it answers, as over a PRECEDES link."""
    turns = [
        "Caroline: I finally adopted a dog from the shelter last week.",
        "Melanie: What breed is the new dog?",
        "Caroline: A border collie, very clever and full of energy.",
        "Melanie: Kayaking on the lake was so calm this morning.",
    ]
    written = service.remember_many(ns, [MemoryInput(text=t, kind="turn") for t in turns])
    reply = written[2]
    ranked = [
        c.memory_id
        for c in service.bundle(ns, "Which breed is the dog?", budget_tokens=400).capsules
    ]
    assert ranked[:2] == [written[1].id, reply.id]
    # A declared PRECEDES link out of the question wins over the order of writing.
    elsewhere = remember(service, ns, "Caroline: It is a spaniel, said the vet.")
    link(service, ns, written[1], elsewhere, LinkKind.PRECEDES)
    ranked = [
        c.memory_id
        for c in service.bundle(ns, "Which breed is the dog?", budget_tokens=400).capsules
    ]
    assert ranked[:2] == [written[1].id, elsewhere.id]


def test_reported_tokens_go_on_the_assembled_event_of_the_step(
    service: MemoryService, ns: str
) -> None:
    service.record_event(ns, "run-r", 1, "served", "read a file")
    with pytest.raises(NotFoundError, match="no 'assembled' event at step 1"):
        service.store.set_reported_tokens(ns, "run-r", 1, 900)
    service.store.append_event(
        ns,
        "run-r",
        step=1,
        kind="assembled",
        detail="first",
        est_tokens=800,
        at=datetime(2025, 1, 1, tzinfo=UTC),
    )
    service.store.append_event(
        ns,
        "run-r",
        step=1,
        kind="assembled",
        detail="second",
        est_tokens=810,
        at=datetime(2025, 1, 2, tzinfo=UTC),
    )
    event = service.store.set_reported_tokens(ns, "run-r", 1, 905)
    assert (event.detail, event.est_tokens, event.reported_tokens) == ("second", 810, 905)
    events = service.events(ns, "run-r")
    assert [e.reported_tokens for e in events] == [None, None, 905]
    with pytest.raises(NotFoundError):
        service.store.set_reported_tokens(ns, "run-r", 2, 1)
