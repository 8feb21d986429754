"""``GraphsvcRetriever``: a question in, graphsvc's bundle out, as LangChain ``Document``s.

Each packed capsule of the bundle becomes a document whose ``page_content`` is the memory's text
and whose metadata says what graphsvc knows of it and of the bundle:

- ``id``, ``score``, ``occurredAt`` (ISO 8601 or None), ``kind``, ``tags``: the memory and its
  score for this question;
- ``skipped``, ``topScore``, ``evidenceCoverage``, ``uncoveredWords``: the bundle's account of
  what memory does not cover (the same on every document of one answer), so an agent can tell
  that memory has no answer, or only part of one.

When graphsvc abstains (its best score is below ``min_score``), the retriever returns no
documents; with ``include_abstained=True`` it returns the abstained memories instead, each with
``skipped: True``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr

from graphsvc.client import DEFAULT_URL
from graphsvc.errors import ForbiddenError
from graphsvc.model import AsOfMode, ContextBundle, ContextCapsule
from graphsvc.requests import BundleQuery
from graphsvc_langchain import _io
from graphsvc_langchain._connection import DEFAULT_TIMEOUT, Connection

VIEWER = "query Viewer { viewer { namespace } }"


class GraphsvcRetriever(BaseRetriever):
    """Retrieve what graphsvc's bundle offers a prompt for the question.

    Constructing it does no I/O.

    Attributes:
        url: graphsvc's GraphQL endpoint.
        api_key: the key (it decides the graphsvc namespace read).
        namespace: when set, the graphsvc namespace the retriever must read: checked once
            against the key's (``viewer``), so a wrong key fails instead of answering from
            another namespace. graphsvc takes the namespace from the key, never from a request.
        k: the most documents (the bundle's ``maxCapsules``); ``invoke(question, k=...)``
            overrides it for one call.
        budget_tokens: the bundle's token budget (None: the server's default).
        stage: the scoring stage (``default``, ``recent``, ``exact``).
        min_score: abstain below this top score (None: the stage's threshold; 0: never).
        as_of / as_of_mode: answer as memory would have then (``as_of`` needs a time zone;
            ``as_of_mode`` KNOWN: what was recorded by then; VALID, the default: what was true
            then).
        include_abstained: on abstention, return the abstained memories flagged
            ``skipped: True`` instead of nothing.
        timeout: seconds per request.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    url: str = DEFAULT_URL
    api_key: SecretStr | None = None
    namespace: str | None = None
    k: int = Field(default=4, ge=1)
    budget_tokens: int | None = None
    stage: str | None = None
    min_score: float | None = None
    as_of: datetime | None = None
    as_of_mode: AsOfMode | None = None
    include_abstained: bool = False
    timeout: float = DEFAULT_TIMEOUT

    _connection: Connection | None = PrivateAttr(default=None)
    _checked: bool = PrivateAttr(default=False)

    def _link(self) -> Connection:
        if self._connection is None:
            key = None if self.api_key is None else self.api_key.get_secret_value()
            self._connection = Connection(self.url, api_key=key, timeout=self.timeout)
        return self._connection

    def _bundle_call(self, query: str, k: int) -> _io.Call:
        request = BundleQuery(
            query=query,
            budget_tokens=self.budget_tokens,
            stage=self.stage,
            min_score=self.min_score,
            max_capsules=k,
            as_of=self.as_of,
            as_of_mode=self.as_of_mode,
        )
        return _io.Call("bundle", (request,), {})

    def _plan(self, query: str, k: int) -> _io.Plan[list[Document]]:
        if self.namespace is not None and not self._checked:
            data = yield _io.Call("execute", (VIEWER,))
            served = data["viewer"]["namespace"]
            if served != self.namespace:
                raise ForbiddenError(
                    f"the API key serves graphsvc namespace {served!r}, and this retriever was "
                    f"configured for {self.namespace!r}: use that namespace's key"
                )
            self._checked = True
        bundle: ContextBundle = yield self._bundle_call(query, k)
        capsules = list(bundle.capsules)
        if bundle.skipped:
            if not self.include_abstained:
                return []
            capsules = [c for c in bundle.excluded if c.reason == "abstained"][:k]
        found = yield from _io.read([capsule.memory_id for capsule in capsules])
        return [
            _document(capsule, found.get(capsule.memory_id), bundle)
            for capsule in capsules
            if capsule.memory_id in found
        ]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = int(kwargs.get("k", self.k))
        return self._link().run(self._plan(query, k))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = int(kwargs.get("k", self.k))
        return await self._link().arun(self._plan(query, k))


def _document(
    capsule: ContextCapsule, memory: _io.Stored | None, bundle: ContextBundle
) -> Document:
    occurred = capsule.occurred_at
    metadata: dict[str, Any] = {
        "id": str(capsule.memory_id),
        "score": capsule.score,
        "occurredAt": None if occurred is None else occurred.isoformat(),
        "kind": capsule.kind,
        "tags": [] if memory is None else list(memory.tags),
        "skipped": bundle.skipped,
        "topScore": bundle.top_score,
        "evidenceCoverage": bundle.evidence_coverage,
        "uncoveredWords": list(bundle.uncovered_words),
    }
    text = capsule.text if memory is None else memory.text
    return Document(id=str(capsule.memory_id), page_content=text, metadata=metadata)
