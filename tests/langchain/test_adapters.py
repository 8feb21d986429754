"""What the retriever and the vector store promise beyond the standard suites: the bundle's
account in every document's metadata, abstention, the namespace check, metadata kept exactly or
refused, filters, collections, and graphsvc importing no LangChain."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from graphsvc.errors import BadInputError, ForbiddenError
from graphsvc.model import AsOfMode, MemoryInput
from graphsvc_langchain import GraphsvcRetriever, GraphsvcVectorStore
from tests.langchain.conftest import Tenant, python_env

FACTS = (
    MemoryInput(text="The checkout deploy at 14:00 raised the pool timeout", tags=("ops",)),
    MemoryInput(
        text="Checkout latency rose to 4 s after the deploy",
        kind="event",
        occurred_at=datetime(2024, 5, 1, 14, 5, tzinfo=UTC),
    ),
)


@pytest.fixture
def tenant(tenants: dict[str, Tenant]) -> Tenant:
    found = tenants["retriever"]
    found.empty()
    with found.client() as client:
        client.remember_many(FACTS)
    return found


def test_documents_carry_the_memory_and_the_bundles_account(tenant: Tenant) -> None:
    retriever = GraphsvcRetriever(url=tenant.url, api_key=tenant.secret, k=5)
    docs = retriever.invoke("Why did checkout latency rise after the deploy in Lisbon?")
    with tenant.client() as client:
        bundle = client.bundle(
            "Why did checkout latency rise after the deploy in Lisbon?", max_capsules=5
        )
    assert [d.metadata["id"] for d in docs] == [str(c.memory_id) for c in bundle.capsules]
    assert {d.page_content for d in docs} == {f.text for f in FACTS}
    event = next(d for d in docs if d.metadata["kind"] == "event")
    assert event.metadata["occurredAt"] == "2024-05-01T14:05:00+00:00"
    first = next(d for d in docs if d.metadata["tags"] == ["ops"])
    assert first.metadata["occurredAt"] is None
    for doc in docs:
        assert doc.metadata["skipped"] is False
        assert doc.metadata["topScore"] == bundle.top_score
        assert doc.metadata["evidenceCoverage"] == bundle.evidence_coverage
        # Memory says nothing of Lisbon, and every document says so.
        assert doc.metadata["uncoveredWords"] == list(bundle.uncovered_words)
        assert "Lisbon" in doc.metadata["uncoveredWords"]
        assert 0 < doc.metadata["score"] <= 1


async def test_abstention_is_no_documents_or_flagged_ones(tenant: Tenant) -> None:
    question = "Which violin did Paganini prefer?"
    assert await GraphsvcRetriever(url=tenant.url, api_key=tenant.secret).ainvoke(question) == []
    flagged = GraphsvcRetriever(
        url=tenant.url, api_key=tenant.secret, min_score=0.99, include_abstained=True
    )
    docs = await flagged.ainvoke("checkout deploy")
    assert docs and all(d.metadata["skipped"] is True for d in docs)


def test_the_namespace_is_checked_against_the_key(tenant: Tenant) -> None:
    right = GraphsvcRetriever(url=tenant.url, api_key=tenant.secret, namespace=tenant.namespace)
    assert right.invoke("checkout deploy")
    wrong = GraphsvcRetriever(url=tenant.url, api_key=tenant.secret, namespace="elsewhere")
    with pytest.raises(ForbiddenError, match="serves graphsvc namespace"):
        wrong.invoke("checkout deploy")


def test_as_of_answers_as_memory_was_then(tenant: Tenant) -> None:
    before = GraphsvcRetriever(
        url=tenant.url, api_key=tenant.secret, as_of=datetime(2000, 1, 1, tzinfo=UTC)
    )
    assert before.invoke("checkout deploy") == []
    known_now = GraphsvcRetriever(
        url=tenant.url, api_key=tenant.secret, as_of=datetime.now(UTC), as_of_mode=AsOfMode.KNOWN
    )
    assert known_now.invoke("checkout deploy")


def test_vector_store_metadata_filters_and_collections(tenant: Tenant) -> None:
    docs = GraphsvcVectorStore(tenant.url, api_key=tenant.key, collection="docs")
    other = GraphsvcVectorStore(tenant.url, api_key=tenant.key, collection="other")
    meta = {"source": "runbook.md", "page": 3, "nested": {"a": [1, 2.5, None, True]}}
    docs.add_texts(["restart the payment workers first"], [meta], ids=["r1"])
    docs.add_texts(
        ["when restarting the payment workers fails, page the on-call engineer"],
        [{"source": "oncall.md", "page": 1}],
        ids=["r2"],
    )
    other.add_texts(["restart the payment workers first"], ids=["r1"])
    [got] = docs.get_by_ids(["r1"])
    assert got.metadata == meta
    found = docs.similarity_search_with_relevance_scores("restart payment workers", k=5)
    assert [d.id for d, _ in found][:1] == ["r1"]
    assert all(0 < score <= 1 for _, score in found)
    assert len({d.id for d, _ in found}) == len(found)  # the other collection's twin is not here
    paged = docs.similarity_search("restart payment workers", k=5, filter={"page": {"$lt": 3}})
    assert [d.id for d in paged] == ["r2"]
    assert docs.embeddings is None
    docs.delete()
    assert docs.get_by_ids(["r1", "r2"]) == []
    assert [d.id for d in other.get_by_ids(["r1"])] == ["r1"]


def test_vector_store_refuses_what_it_cannot_keep(tenant: Tenant) -> None:
    store = GraphsvcVectorStore(tenant.url, api_key=tenant.key)
    with pytest.raises(BadInputError, match="at most 512"):
        store.add_texts(["a text"], [{"blob": "x" * 600}])
    with pytest.raises(BadInputError, match="would not come back"):
        store.add_texts(["a text"], [{"when": (2024, 5, 1)}])
    with pytest.raises(BadInputError, match="text 1"):
        store.add_texts(["a text", "   "])
    with pytest.raises(BadInputError, match="1 ids for 2 texts"):
        store.add_texts(["a text", "another text"], ids=["only-one"])
    assert store.similarity_search("a text", k=3) == []  # nothing of a refused call was written


def test_import_graphsvc_loads_no_langchain() -> None:
    code = (
        "import sys, graphsvc, graphsvc.client, graphsvc.cli, graphsvc.api.app\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langgraph', 'langchain', 'graphsvc_langchain', 'langsmith'))\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=python_env(), check=False
    )
    assert done.returncode == 0, done.stderr
