"""Tenancy: a key for namespace A can never read, write, link to or forget anything of B.

A hypothesis property test drives random interleavings of operations by two tenants through the
schema (the same resolvers the server runs), on both stores, and checks after every step that no
answer mentions the other tenant's ids, namespace or text, that refusals say NOT_FOUND without
naming the other namespace, and that each tenant's listing is exactly what it wrote and kept.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from tests.api_support import Outcome, context, run
from tests.helpers import fixed_clock, make_settings

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
WORDS = ["kettle", "boils", "whistle", "toaster", "crumbs", "garden", "hose", "leaks", "invoice"]
MARKERS = ("alphazulu", "bravoyankee")  # each tenant's texts carry its own marker word
RUN_ID = "shared-run"  # both tenants use the same run id

MEMORY_FIELDS = "id namespace text kind tags links { source target kind }"


@dataclass
class Tenant:
    """What one tenant wrote and still has (the model the answers are checked against)."""

    namespace: str
    marker: str
    live: dict[str, str] = field(default_factory=dict)  # id -> text
    ever: set[str] = field(default_factory=set)
    links: set[tuple[str, str, str]] = field(default_factory=set)


Op = tuple[Any, ...]

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
pick = st.integers(min_value=0, max_value=10_000)
whose = st.booleans()  # True: one of my ids; False: one of the other tenant's
ops = st.one_of(
    st.tuples(st.just("remember"), texts, st.booleans()),
    st.tuples(st.just("remember_theirs"), texts, pick),
    st.tuples(
        st.just("link"),
        whose,
        pick,
        whose,
        pick,
        st.sampled_from(["CAUSES", "PRECEDES", "RELATES_TO", "SUPERSEDES"]),
    ),
    st.tuples(st.just("forget"), whose, pick),
    st.tuples(st.just("read"), whose, pick),
    st.tuples(st.just("bundle"), texts, st.booleans()),
    st.tuples(st.just("reconstruct"), texts, st.booleans()),
    st.tuples(st.just("list")),
    st.tuples(st.just("events")),
)
steps = st.lists(st.tuples(st.integers(min_value=0, max_value=1), ops), min_size=1, max_size=20)


def choose(tenant: Tenant, other: Tenant, mine: bool, index: int) -> str | None:
    pool = sorted(tenant.ever if mine else other.ever)
    return pool[index % len(pool)] if pool else None


def strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    """Every string in a JSON value, with the key it is under."""
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(v, k)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v, key)]
    return []


def check_isolated(
    outcome: Outcome, me: Tenant, other: Tenant, sent: frozenset[str] = frozenset()
) -> None:
    """Nothing of ``other`` in what ``me`` was told: ids (but those ``me`` sent, which errors
    may quote), namespace, memory text. (A caller's own words come back in cues, uncovered terms
    and event details, so the other tenant's marker word is looked for in memory texts only.)"""
    told = strings(outcome.data) + [("message", m) for m in outcome.messages]
    for key, text in told:
        assert other.namespace not in text, text
        if key == "text":
            assert other.marker not in text, text
        for found in UUID_RE.findall(text):
            assert found not in other.ever or found in me.ever or found in sent, (found, text)


def apply(service: MemoryService, me: Tenant, other: Tenant, op: Op) -> None:
    ctx = context(service, me.namespace)
    kind = op[0]
    sent: set[str] = set()
    if kind == "remember":
        text = f"{op[1]} {me.marker}"
        outcome = run(
            ctx,
            f"mutation($t: String!, $r: String) {{ remember(input: {{text: $t}}, runId: $r) "
            f"{{ {MEMORY_FIELDS} }} }}",
            {"t": text, "r": RUN_ID if op[2] else None},
        )
        made = outcome.ok()["remember"]
        assert made["namespace"] == me.namespace
        me.live[made["id"]] = text
        me.ever.add(made["id"])
    elif kind == "remember_theirs":
        # Writing under an id the other tenant holds must not touch their memory.
        target = choose(me, other, False, op[2])
        if target is None:
            return
        sent.add(target)
        outcome = run(
            ctx,
            f"mutation($t: String!, $id: UUID!) {{ remember(input: {{text: $t, id: $id}}) "
            f"{{ {MEMORY_FIELDS} }} }}",
            {"t": f"{op[1]} {me.marker}", "id": target},
        )
        if outcome.errors:
            assert outcome.codes == ["BAD_INPUT"], outcome.errors
        else:  # a store that scopes ids per namespace may accept it: it is then mine
            made = outcome.ok()["remember"]
            assert made["namespace"] == me.namespace
            me.live[made["id"]] = made["text"]
            me.ever.add(made["id"])
    elif kind == "link":
        _, mine_source, i, mine_target, j, link_kind = op
        source, target = choose(me, other, mine_source, i), choose(me, other, mine_target, j)
        if source is None or target is None:
            return
        sent.update((source, target))
        outcome = run(
            ctx,
            "mutation($s: UUID!, $t: UUID!, $k: LinkKind!) { link(input: {source: $s, "
            "target: $t, kind: $k}) { source target kind } }",
            {"s": source, "t": target, "k": link_kind},
        )
        if source == target:
            assert outcome.codes == ["BAD_INPUT"]
        elif source not in me.live or target not in me.live:
            assert outcome.codes == ["NOT_FOUND"], outcome.errors
        elif outcome.errors:
            assert outcome.codes == ["BAD_INPUT"]  # a SUPERSEDES cycle
        else:
            me.links.add((source, target, link_kind))
    elif kind == "forget":
        target = choose(me, other, op[1], op[2])
        if target is None:
            return
        sent.add(target)
        outcome = run(
            ctx,
            "mutation($id: UUID!) { forget(id: $id) { memoryId namespace "
            "removedLinks { source target kind } removedBeliefIds } }",
            {"id": target},
        )
        if target in me.live:
            receipt = outcome.ok()["forget"]
            assert receipt["namespace"] == me.namespace
            del me.live[target]
            me.links = {lk for lk in me.links if target not in lk[:2]}
        else:
            assert outcome.codes == ["NOT_FOUND"], outcome.errors
    elif kind == "read":
        target = choose(me, other, op[1], op[2])
        if target is None:
            return
        sent.add(target)
        outcome = run(
            ctx, f"query($id: UUID!) {{ memory(id: $id) {{ {MEMORY_FIELDS} }} }}", {"id": target}
        )
        found = outcome.ok()["memory"]
        if target in me.live:
            assert found["id"] == target
            assert found["text"] == me.live[target]
            for link in found["links"]:
                assert link["source"] in me.live and link["target"] in me.live
        else:
            assert found is None
    elif kind == "bundle":
        query = f"{op[1]} {other.marker if op[2] else me.marker}"
        outcome = run(
            ctx,
            "query($q: String!) { bundle(query: $q) { capsules { memoryId text } "
            "excluded { memoryId } uncoveredTerms } }",
            {"q": query},
        )
        bundle = outcome.ok()["bundle"]
        for capsule in bundle["capsules"] + bundle["excluded"]:
            assert capsule["memoryId"] in me.live
    elif kind == "reconstruct":
        outcome = run(
            ctx,
            "mutation($c: String!, $r: String!) { reconstruct(cue: $c, runId: $r) { sourceIds "
            "linkedContextIds memories { id namespace } } }",
            {"c": f"{op[1]} {other.marker if op[2] else me.marker}", "r": RUN_ID},
        )
        belief = outcome.ok()["reconstruct"]
        assert set(belief["sourceIds"]) | set(belief["linkedContextIds"]) <= set(me.live)
        assert {m["namespace"] for m in belief["memories"]} <= {me.namespace}
    elif kind == "list":
        outcome = run(ctx, "{ memories(first: 100) { nodes { id namespace text } } }")
        nodes = outcome.ok()["memories"]["nodes"]
        assert {n["id"] for n in nodes} == set(me.live)
    else:  # events
        outcome = run(
            ctx,
            "query($r: String!) { contextEvents(runId: $r) { runId kind detail } }",
            {"r": RUN_ID},
        )
        outcome.ok()
    check_isolated(outcome, me, other, frozenset(sent))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=steps)
def test_tenants_never_see_each_other(store: Store, tmp_path: Path, script: list[Op]) -> None:
    service = MemoryService(store, make_settings(tmp_path), clock=fixed_clock())
    suffix = uuid.uuid4().hex[:12]
    tenants = [Tenant(f"a{suffix}", MARKERS[0]), Tenant(f"b{suffix}", MARKERS[1])]
    for who, op in script:
        apply(service, tenants[who], tenants[1 - who], op)
    for who in (0, 1):
        me, other = tenants[who], tenants[1 - who]
        listing = run(context(service, me.namespace), "{ memories(first: 100) { nodes { id } } }")
        assert {n["id"] for n in listing.ok()["memories"]["nodes"]} == set(me.live)
        stats = service.stats(me.namespace)
        assert stats.memories == len(me.live)
        assert stats.links == len(me.links)
        check_isolated(listing, me, other)


def test_a_read_key_of_one_namespace_sees_only_that_namespace(store: Store, tmp_path: Path) -> None:
    service = MemoryService(store, make_settings(tmp_path), clock=fixed_clock())
    suffix = uuid.uuid4().hex[:12]
    a, b = f"a{suffix}", f"b{suffix}"
    for namespace in (a, b):
        run(
            context(service, namespace),
            "mutation($t: String!) { rememberMany(inputs: [{text: $t}, "
            '{text: "toaster burns bread"}]) { id } }',
            {"t": f"kettle whistles {namespace}"},
        ).ok()
    reader = context(service, a, role="read")
    listing = run(reader, "{ memories { nodes { namespace text } } viewer { namespace } }").ok()
    assert {n["namespace"] for n in listing["memories"]["nodes"]} == {a}
    assert listing["viewer"] == {"namespace": a}
    bundle = run(reader, '{ bundle(query: "kettle whistles") { capsules { text } } }').ok()
    assert all(b not in c["text"] for c in bundle["bundle"]["capsules"])
