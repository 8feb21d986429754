"""GraphsvcStore (LangGraph's BaseStore) against a real graphsvc server, on both stores: what a
put becomes, what comes back, search ranked by graphsvc's recall, namespaces as tags, filters, and
what is refused."""

from __future__ import annotations

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from graphsvc.errors import BadInputError
from graphsvc_langchain import GraphsvcStore
from graphsvc_langchain.store import KIND
from tests.langchain.conftest import Tenant


@pytest.fixture
def tenant(tenants: dict[str, Tenant]) -> Tenant:
    found = tenants["store"]
    found.empty()
    return found


@pytest.fixture
def store(tenant: Tenant) -> GraphsvcStore:
    return GraphsvcStore(tenant.url, api_key=tenant.key)


def test_a_put_comes_back_as_it_was(store: GraphsvcStore, tenant: Tenant) -> None:
    plain = {"memory": "Ada prefers green tea in the morning"}
    rich = {"food": "pizza", "rating": 4.5, "tags": ["a", "b"], "extra": {"n": 1, "ok": None}}
    store.put(("users", "ada"), "tea", plain)
    store.put(("users", "ada"), "food", rich)
    tea = store.get(("users", "ada"), "tea")
    food = store.get(("users", "ada"), "food")
    assert tea is not None and food is not None
    assert (tea.value, tea.key, tea.namespace) == (plain, "tea", ("users", "ada"))
    assert food.value == rich
    assert store.get(("users", "ada"), "absent") is None
    assert store.get(("users", "bob"), "tea") is None
    # One string field is kept as plain text (what bundles show an agent); other values as JSON.
    with tenant.client() as client:
        capsules = {c.text: c for c in client.bundle("green tea pizza", min_score=0).capsules}
        assert "Ada prefers green tea in the morning" in capsules
        stored = client.memory(capsules["Ada prefers green tea in the morning"].memory_id)
    assert stored is not None and stored.kind == KIND
    assert set(stored.tags) == {"lg:users", "lg:users.ada"}


def test_a_changed_value_replaces_and_delete_removes(store: GraphsvcStore) -> None:
    store.put(("prefs",), "drink", {"memory": "likes coffee"})
    store.put(("prefs",), "drink", {"memory": "likes coffee"})  # the same value: a no-op
    store.put(("prefs",), "drink", {"memory": "switched to tea"})
    item = store.get(("prefs",), "drink")
    assert item is not None and item.value == {"memory": "switched to tea"}
    assert [i.key for i in store.search(("prefs",), query="coffee tea")] == ["drink"]
    store.delete(("prefs",), "drink")
    assert store.get(("prefs",), "drink") is None
    store.delete(("prefs",), "drink")  # deleting what is gone is no error


def test_search_ranks_by_recall_within_the_prefix(store: GraphsvcStore) -> None:
    store.put(("users", "ada", "facts"), "tea", {"memory": "Ada drinks green tea every morning"})
    store.put(("users", "ada", "facts"), "job", {"memory": "Ada works as a compiler engineer"})
    store.put(("users", "bob", "facts"), "tea", {"memory": "Bob drinks green tea at night"})
    found = store.search(("users", "ada"), query="what tea does she drink?")
    assert [item.key for item in found][:1] == ["tea"]
    assert all(item.namespace[:2] == ("users", "ada") for item in found)
    assert found[0].score is not None and 0 < found[0].score <= 1
    scores = [item.score or 0.0 for item in found]
    assert scores == sorted(scores, reverse=True)
    # Without a query: the prefix's items, newest first, paged.
    listed = store.search(("users",), limit=2)
    assert [(i.namespace[1], i.key) for i in listed] == [("bob", "tea"), ("ada", "job")]
    assert [i.key for i in store.search(("users",), limit=2, offset=2)] == ["tea"]
    assert store.search(("nobody",)) == []


def test_filters_on_stored_fields(store: GraphsvcStore) -> None:
    ns = ("notes",)
    store.put(ns, "a", {"text": "deploy froze checkout", "team": "payments", "severity": 3})
    store.put(ns, "b", {"text": "deploy slowed search", "team": "search", "severity": 1})
    store.put(ns, "c", {"text": "deploy broke checkout again", "team": "payments", "severity": 5})
    assert {i.key for i in store.search(ns, filter={"team": "payments"})} == {"a", "c"}
    assert {i.key for i in store.search(ns, filter={"severity": {"$gte": 3}})} == {"a", "c"}
    found = store.search(ns, query="deploy checkout", filter={"severity": {"$lt": 5}})
    assert {i.key for i in found} == {"a", "b"}


def test_unindexed_items_are_listed_but_not_searched(store: GraphsvcStore) -> None:
    store.put(("docs",), "secret", {"memory": "the vault code is seven"}, index=False)
    assert store.search(("docs",), query="vault code") == []
    assert [i.key for i in store.search(("docs",))] == ["secret"]


def test_list_namespaces(store: GraphsvcStore) -> None:
    for ns in [("users", "ada", "facts"), ("users", "bob", "facts"), ("teams", "core")]:
        store.put(ns, "k", {"memory": f"an item of {'/'.join(ns)}"})
    assert store.list_namespaces() == [
        ("teams", "core"),
        ("users", "ada", "facts"),
        ("users", "bob", "facts"),
    ]
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "ada"),
        ("users", "bob"),
    ]
    assert store.list_namespaces(suffix=("*", "facts"), limit=1, offset=1) == [
        ("users", "bob", "facts")
    ]


def test_batch_keeps_order_and_the_last_put_of_a_key(store: GraphsvcStore) -> None:
    results = store.batch(
        [
            PutOp(("b",), "k", {"memory": "first"}),
            PutOp(("b",), "k", {"memory": "second"}),
            GetOp(("b",), "k"),
            PutOp(("b",), "k", None),
            GetOp(("b",), "k"),
            SearchOp(("b",)),
        ]
    )
    assert results[:2] == [None, None]
    got = results[2]
    assert got is not None and not isinstance(got, list) and got.value == {"memory": "second"}
    assert results[3:] == [None, None, []]


async def test_the_async_store(store: GraphsvcStore) -> None:
    await store.aput(("a",), "k", {"memory": "Ada keeps bees on the roof"})
    item = await store.aget(("a",), "k")
    assert item is not None and item.value == {"memory": "Ada keeps bees on the roof"}
    found = await store.asearch(("a",), query="who keeps bees?")
    assert [i.key for i in found] == ["k"]
    assert await store.alist_namespaces() == [("a",)]
    await store.adelete(("a",), "k")
    assert await store.aget(("a",), "k") is None


def test_what_cannot_round_trip_is_refused(store: GraphsvcStore) -> None:
    with pytest.raises(BadInputError, match="would not come back"):
        store.put(("x",), "k", {"pair": (1, 2)})
    with pytest.raises(BadInputError, match="not JSON"):
        store.put(("x",), "k", {"when": object()})
    with pytest.raises(BadInputError, match="tags are 1 to 64"):
        store.put(("x" * 70,), "k", {"memory": "a namespace too long for a tag"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"memory": "periods are LangGraph's separator"})
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("x",), "k", {"memory": "expiring"}, ttl=5)
    assert store.search(("x",)) == []
