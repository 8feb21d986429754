"""The standard suites of langchain-tests, written by LangChain, run against a real graphsvc
server: the retriever and the vector store (sync and async), on the embedded store and on Neo4j.

Every standard test runs; none is overridden or skipped. The vector store suite's
``get_embeddings()`` (a fake embedding) is never used: graphsvc encodes texts itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from graphsvc.model import MemoryInput
from graphsvc_langchain import GraphsvcRetriever, GraphsvcVectorStore
from tests.langchain.conftest import Tenant

# What the retriever suite asks, and memories that answer it (each distinct, so none is left out
# as a near-duplicate of another).
QUESTION = "Why did checkout slow down after the deploy?"
INCIDENT = (
    "The checkout service slowed down right after the 14:00 deploy.",
    "The deploy raised the checkout database pool timeout from 2 s to 30 s.",
    "Checkout latency p99 went from 300 ms to 4 s after the deploy.",
    "Rolling back the deploy brought checkout latency back to normal.",
    "The slow checkout requests all waited on database connections.",
    "The deploy also enabled verbose logging in checkout.",
)


def _vectorstore(tenant: Tenant) -> Iterator[VectorStore]:
    tenant.empty()
    store = GraphsvcVectorStore(tenant.url, api_key=tenant.key, collection="standard")
    yield store
    store.delete()


class _Retriever(RetrieversIntegrationTests):
    tenant: Tenant

    def _seed(self, tenant: Tenant) -> None:
        self.tenant = tenant
        with tenant.client() as client:
            client.remember_many([MemoryInput(text=text, kind="event") for text in INCIDENT])

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return GraphsvcRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"url": self.tenant.url, "api_key": self.tenant.key}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


class TestVectorStoreEmbedded(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, mirror_tenants: dict[str, Tenant]) -> Iterator[VectorStore]:
        yield from _vectorstore(mirror_tenants["vectorstore"])


@pytest.mark.neo4j
class TestVectorStoreNeo4j(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, neo4j_tenants: dict[str, Tenant]) -> Iterator[VectorStore]:
        yield from _vectorstore(neo4j_tenants["vectorstore"])


class TestRetrieverEmbedded(_Retriever):
    @pytest.fixture(autouse=True)
    def _data(self, mirror_tenants: dict[str, Tenant]) -> None:
        self._seed(mirror_tenants["retriever"])


@pytest.mark.neo4j
class TestRetrieverNeo4j(_Retriever):
    @pytest.fixture(autouse=True)
    def _data(self, neo4j_tenants: dict[str, Tenant]) -> None:
        self._seed(neo4j_tenants["retriever"])
