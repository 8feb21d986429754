"""Tenants cannot interfere: memory ids are scoped to the namespace on both stores.

The same id may name a memory in two namespaces; a write key of one namespace can neither learn
whether another holds an id or a content (no answer or error depends on it) nor block another's
write by taking its id first (squatting: content ids are predictable). Every lookup, link, belief,
forget, erase and export is per (namespace, id).

A hypothesis property interleaves two tenants' operations (explicit ids from a small shared pool,
content-derived ids, the other tenant's derived ids, links, forgets, reads, erases) and checks
every answer against a model of the tenant alone: what each tenant is told depends only on what it
did itself.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neo4j import GraphDatabase

from graphsvc.errors import BadInputError, ConflictError, GraphsvcError, NotFoundError
from graphsvc.model import LinkInput, LinkKind, Memory, MemoryInput
from graphsvc.service import MemoryService, content_id
from graphsvc.store.base import Store
from graphsvc.store.candidates import TermStats
from graphsvc.text import analyse
from tests.helpers import fixed_clock, make_settings
from tests.neo4j_server import neo4j_store_factory

POOL = [uuid.uuid5(uuid.NAMESPACE_URL, f"graphsvc-tenancy/{i}") for i in range(5)]
TEXTS = ["kettle boils", "toaster crumbs", "garden hose leaks", "invoice overdue", "kettle leaks"]
TAGS = [(), ("red",), ("blue",)]
KINDS = [LinkKind.CAUSES, LinkKind.PRECEDES, LinkKind.RELATES_TO]


def service_on(store: Store, tmp_path: Path) -> MemoryService:
    return MemoryService(store, make_settings(tmp_path), clock=fixed_clock())


def pair() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:12]
    return f"a{suffix}", f"b{suffix}"


@dataclass
class Tenant:
    """What one tenant wrote and still has: the model every answer is checked against."""

    namespace: str
    live: dict[UUID, MemoryInput] = field(default_factory=dict)
    links: set[tuple[UUID, UUID, LinkKind]] = field(default_factory=set)


def same(stored: MemoryInput, item: MemoryInput) -> bool:
    return (stored.text, stored.tags) == (item.text, item.tags)


def told(exc: GraphsvcError, me: Tenant, other: Tenant) -> None:
    """An error names nothing of the other tenant."""
    assert other.namespace not in str(exc)


def check_views(service: MemoryService, me: Tenant) -> None:
    """Stats, term statistics, candidates and export are exactly the tenant's own."""
    stats = service.stats(me.namespace)
    assert (stats.memories, stats.links) == (len(me.live), len(me.links))
    texts = [item.text for item in me.live.values()]
    words = sorted({w for t in [*TEXTS, "squatting"] for w in analyse(t)})
    terms = service.store.term_stats(me.namespace, words)
    live = service.get_memories(me.namespace, list(me.live))
    assert terms == TermStats(
        len(live),
        sum(len(m.terms) for m in live),
        {w: sum(1 for m in live if w in m.terms) for w in words},
    )
    assert sorted(m.text for m in live) == sorted(texts)
    found = {c.id for c in service.store.candidates(me.namespace, words, words)}
    assert found == set(me.live)
    exported = list(service.export(me.namespace))
    memories = {m.id: m.text for m in exported if isinstance(m, Memory)}
    assert memories == {mid: item.text for mid, item in me.live.items()}
    links = {(lk.source, lk.target, lk.kind) for lk in exported if not isinstance(lk, Memory)}
    assert links == me.links


def write(service: MemoryService, me: Tenant, other: Tenant, item: MemoryInput) -> None:
    mid = item.id or content_id(me.namespace, item)
    stored = me.live.get(mid)
    if stored is not None and not same(stored, item):
        with pytest.raises(ConflictError) as info:
            service.write_memories(me.namespace, [item])
        told(info.value, me, other)
        return
    memories, result = service.write_memories(me.namespace, [item])
    assert [m.id for m in memories] == [mid]
    assert memories[0].namespace == me.namespace
    assert memories[0].text == item.text
    if stored is None:
        assert (result.created, result.unchanged) == ((mid,), ())
        me.live[mid] = item
    else:
        assert (result.created, result.unchanged) == ((), (mid,))


def apply(service: MemoryService, me: Tenant, other: Tenant, op: tuple[Any, ...]) -> None:
    pool = sorted({*POOL, *me.live, *other.live}, key=str)
    kind = op[0]
    if kind == "write":  # an explicit id from the shared pool, or none (derived from content)
        _, index, text, tags = op
        mid = None if index is None else POOL[index]
        write(service, me, other, MemoryInput(id=mid, text=TEXTS[text], tags=TAGS[tags]))
    elif kind == "squat":  # write first under the id the other tenant's content would get
        _, text, tags = op
        theirs = MemoryInput(text=TEXTS[text], tags=TAGS[tags])
        target = content_id(other.namespace, theirs)
        write(service, me, other, MemoryInput(id=target, text=f"squatting {TEXTS[text]}"))
    elif kind == "link":
        _, i, j, k = op
        source, target = pool[i % len(pool)], pool[j % len(pool)]
        item = LinkInput(source=source, target=target, kind=KINDS[k])
        if source == target:
            with pytest.raises(BadInputError):
                service.link(me.namespace, item)
        elif source in me.live and target in me.live:
            link = service.link(me.namespace, item)
            assert (link.source, link.target, link.kind) == (source, target, KINDS[k])
            me.links.add((source, target, KINDS[k]))
        else:
            with pytest.raises(NotFoundError) as info:
                service.link(me.namespace, item)
            told(info.value, me, other)
    elif kind == "forget":
        target = pool[op[1] % len(pool)]
        if target in me.live:
            forgot = service.forget(me.namespace, target)
            touching = {lk for lk in me.links if target in lk[:2]}
            assert {(r.source, r.target, r.kind) for r in forgot.removed_links} == touching
            del me.live[target]
            me.links -= touching
        else:
            with pytest.raises(NotFoundError) as info:
                service.forget(me.namespace, target)
            told(info.value, me, other)
    elif kind == "read":
        target = pool[op[1] % len(pool)]
        found = service.get_memory(me.namespace, target)
        if target in me.live:
            assert found is not None and found.text == me.live[target].text
            links = service.links_of(me.namespace, [target])
            assert {(lk.source, lk.target, lk.kind) for lk in links} == {
                lk for lk in me.links if target in lk[:2]
            }
        else:
            assert found is None
            assert service.links_of(me.namespace, [target]) == []
    else:  # erase a tag
        tag = TAGS[op[1]][0]
        gone = {mid for mid, item in me.live.items() if tag in item.tags}
        receipt = service.erase(me.namespace, tag=tag)
        touching = {lk for lk in me.links if lk[0] in gone or lk[1] in gone}
        assert (receipt.memories, receipt.links) == (len(gone), len(touching))
        for mid in gone:
            del me.live[mid]
        me.links -= touching


index = st.integers(min_value=0, max_value=10_000)
ops = st.one_of(
    st.tuples(
        st.just("write"),
        st.none() | st.integers(0, len(POOL) - 1),
        st.integers(0, len(TEXTS) - 1),
        st.integers(0, len(TAGS) - 1),
    ),
    st.tuples(st.just("squat"), st.integers(0, len(TEXTS) - 1), st.integers(0, len(TAGS) - 1)),
    st.tuples(st.just("link"), index, index, st.integers(0, len(KINDS) - 1)),
    st.tuples(st.just("forget"), index),
    st.tuples(st.just("read"), index),
    st.tuples(st.just("erase"), st.integers(1, len(TAGS) - 1)),
)
scripts = st.lists(st.tuples(st.integers(0, 1), ops), min_size=1, max_size=25)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=scripts)
def test_two_tenants_never_observe_or_block_each_other(
    store: Store, tmp_path: Path, script: list[tuple[int, tuple[Any, ...]]]
) -> None:
    service = service_on(store, tmp_path)
    a, b = pair()
    tenants = [Tenant(a), Tenant(b)]
    try:
        for who, op in script:
            me, other = tenants[who], tenants[1 - who]
            apply(service, me, other, op)
            check_views(service, me)
        for tenant in tenants:
            check_views(service, tenant)
    finally:
        for tenant in tenants:
            service.erase(tenant.namespace, everything=True)


# -- the same, spelled out ----------------------------------------------------------------------


def test_the_same_id_lives_in_two_namespaces_independently(store: Store, tmp_path: Path) -> None:
    service = service_on(store, tmp_path)
    a, b = pair()
    mid, peer = POOL[0], POOL[1]
    try:
        mine = service.remember(a, MemoryInput(id=mid, text="the kettle boils"))
        theirs = service.remember(b, MemoryInput(id=mid, text="the garden hose leaks"))
        assert (mine.id, theirs.id) == (mid, mid)
        for ns in (a, b):
            service.remember(ns, MemoryInput(id=peer, text=f"peer of {ns}"))
        service.link(b, LinkInput(source=mid, target=peer, kind=LinkKind.CAUSES))
        assert service.links_of(a, [mid]) == []
        assert len(service.links_of(b, [mid])) == 1

        receipt = service.forget(a, mid)
        assert receipt.removed_links == ()
        assert service.get_memory(a, mid) is None
        kept = service.get_memory(b, mid)
        assert kept is not None and kept.text == "the garden hose leaks"
        assert len(service.links_of(b, [mid])) == 1
        again = service.remember(a, MemoryInput(id=mid, text="a new text"))
        assert again.text == "a new text"
        with pytest.raises(ConflictError) as info:
            service.remember(b, MemoryInput(id=mid, text="the kettle boils"))
        assert a not in str(info.value)
        assert [m.text for m in service.get_memories(b, [mid])] == ["the garden hose leaks"]
    finally:
        for ns in (a, b):
            service.erase(ns, everything=True)


def test_a_squatted_content_id_does_not_block_its_owner(store: Store, tmp_path: Path) -> None:
    service = service_on(store, tmp_path)
    a, b = pair()
    item = MemoryInput(text="Bob is allergic to peanuts", tags=("health",))
    target = content_id(b, item)
    try:
        squat = service.remember(a, MemoryInput(id=target, text="something else entirely"))
        assert squat.id == target
        owner = service.remember(b, item)
        assert owner.id == target and owner.text == item.text
        assert service.remember(b, item).recorded_at == owner.recorded_at  # idempotent
        bundle = service.bundle(a, "allergic peanuts")
        assert bundle.capsules == ()
    finally:
        for ns in (a, b):
            service.erase(ns, everything=True)


def test_whether_another_namespace_holds_an_id_changes_no_answer(
    store: Store, tmp_path: Path
) -> None:
    """The same script answers the same whether a third tenant holds the ids or not."""
    service = service_on(store, tmp_path)
    holder, asker = pair()
    lonely = f"c{asker[1:]}"
    spaces = [holder, asker, lonely]

    def script(ns: str) -> list[object]:
        answers: list[object] = []
        for mid in POOL[:3]:
            memories, result = service.write_memories(ns, [MemoryInput(id=mid, text="probe")])
            answers.append((memories[0].id, memories[0].text, result.created, result.unchanged))
        try:
            service.remember(ns, MemoryInput(id=POOL[0], text="probe, other content"))
        except ConflictError as exc:
            answers.append(str(exc))
        answers.append(service.get_memory(ns, POOL[3]))
        try:
            service.forget(ns, POOL[4])
        except NotFoundError as exc:
            answers.append(str(exc).replace(ns, "NS"))
        return answers

    try:
        for mid in POOL:
            service.remember(holder, MemoryInput(id=mid, text=f"held {mid}"))
        asked, alone = script(asker), script(lonely)
        assert len(asked) == 6
        assert asked == alone
    finally:
        for ns in spaces:
            service.erase(ns, everything=True)


# -- the migration of a Neo4j database made when ids were unique across namespaces -----------


def _constraints(driver: Any) -> dict[str, list[str]]:
    with driver.session() as session:
        rows = session.run("SHOW CONSTRAINTS YIELD name, labelsOrTypes, properties").data()
    return {row["name"]: row["properties"] for row in rows if row["labelsOrTypes"] == ["Memory"]}


@pytest.mark.neo4j
def test_opening_an_older_neo4j_database_migrates_its_id_constraint(tmp_path: Path) -> None:
    """A database with the old ``Memory.id`` constraint (and data) is migrated at open: the
    constraint becomes ``(namespace, id)``, the data stays, and ids are per namespace.

    The old constraint can only be put back while no id is in two namespaces; on a shared server
    where one is (other suites write such memories now), the test checks the other half: a
    database without the composite constraint gets it at open."""
    factory = neo4j_store_factory()
    uri = os.environ.get("GRAPHSVC_NEO4J_URI")
    if not uri:
        pytest.skip("the migration test changes the schema of GRAPHSVC_NEO4J_URI's database")
    password = os.environ.get("GRAPHSVC_NEO4J_PASSWORD", "")
    auth = (os.environ.get("GRAPHSVC_NEO4J_USER", "neo4j"), password) if password else None
    store = factory()
    store.open()
    service = service_on(store, tmp_path)
    a, b = pair()
    try:
        before = service.remember(a, MemoryInput(id=POOL[0], text="written before the migration"))
        with GraphDatabase.driver(uri, auth=auth) as driver:
            with driver.session() as session:  # the schema as graphsvc made it before
                shared = session.run(
                    "MATCH (m:Memory) WITH m.id AS id, count(*) AS n WHERE n > 1 "
                    "RETURN count(id) AS ids"
                ).single()
                old = shared is not None and shared["ids"] == 0  # no id in two namespaces
                if old:
                    session.run(
                        "CREATE CONSTRAINT memory_id IF NOT EXISTS "
                        "FOR (m:Memory) REQUIRE m.id IS UNIQUE"
                    ).consume()
                session.run("DROP CONSTRAINT memory_namespace_id IF EXISTS").consume()
            found = _constraints(driver)
            assert "memory_namespace_id" not in found
            assert ("memory_id" in found) == old

            migrated = factory()
            migrated.open()  # the migration runs here
            try:
                found = _constraints(driver)
                assert found.get("memory_namespace_id") == ["namespace", "id"]
                assert "memory_id" not in found
                fresh = service_on(migrated, tmp_path)
                assert fresh.get_memory(a, POOL[0]) == before
                other = fresh.remember(b, MemoryInput(id=POOL[0], text="the same id elsewhere"))
                assert other.id == before.id and other.namespace == b
                with pytest.raises(ConflictError):
                    fresh.remember(b, MemoryInput(id=POOL[0], text="other content"))
            finally:
                migrated.close()
            again = factory()
            again.open()  # idempotent: a second open changes nothing
            again.close()
            assert _constraints(driver) == found
    finally:
        for ns in (a, b):
            service.erase(ns, everything=True)
        store.close()
