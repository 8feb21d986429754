"""The graphsvc clients an adapter uses.

LangChain retrievers and vector stores and LangGraph stores have no close in their contracts, so
an adapter holds no connection between operations: each operation opens a client, runs its
requests on it, and closes it (nothing is left open for the garbage collector, and an async client
never outlives its event loop). A caller that wants one pool for many operations passes its own
``client`` / ``async_client``, which the adapter uses and never closes. Constructing an adapter
does no I/O.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from graphsvc.client import DEFAULT_URL, AsyncGraphsvcClient, GraphsvcClient
from graphsvc_langchain import _io

DEFAULT_TIMEOUT = 30.0


class Connection:
    """Where a graphsvc server is and how to reach it.

    Args:
        url: the GraphQL endpoint (``http://host:port/graphql``).
        api_key: sent as ``Authorization: Bearer <key>``; the key decides the graphsvc namespace.
        timeout: seconds per request.
        client: a ``GraphsvcClient`` to use for every operation (left open).
        async_client: an ``AsyncGraphsvcClient`` to use for every operation (left open).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        client: GraphsvcClient | None = None,
        async_client: AsyncGraphsvcClient | None = None,
    ) -> None:
        self.url = url
        self._api_key = api_key
        self._timeout = timeout
        self._client = client
        self._async_client = async_client

    @contextmanager
    def _session(self) -> Iterator[GraphsvcClient]:
        if self._client is not None:
            yield self._client
            return
        with GraphsvcClient(self.url, api_key=self._api_key, timeout=self._timeout) as client:
            yield client

    @asynccontextmanager
    async def _asession(self) -> AsyncIterator[AsyncGraphsvcClient]:
        if self._async_client is not None:
            yield self._async_client
            return
        made = AsyncGraphsvcClient(self.url, api_key=self._api_key, timeout=self._timeout)
        async with made as client:
            yield client

    def run(self, plan: _io.Plan[_io.R]) -> _io.R:
        """Run ``plan`` with a synchronous client."""
        with self._session() as client:
            return _io.run(plan, client)

    async def arun(self, plan: _io.Plan[_io.R]) -> _io.R:
        """Run ``plan`` with an asynchronous client."""
        async with self._asession() as client:
            return await _io.arun(plan, client)
