"""``GraphsvcVectorStore``: a LangChain ``VectorStore`` over a graphsvc server.

graphsvc encodes texts itself (hybrid recall: words, graph and meaning), so the store needs no
``Embeddings``: one may be given, for callers that read ``store.embeddings``, and is never used.
A similarity search is graphsvc's recall: the memories a bundle ranked for the query, best first,
with graphsvc's score in [0, 1] (1 best), which is also the relevance score.

A document becomes one memory of kind ``document``: ``page_content`` is its text; it carries the
tag ``lc:<collection>``; its LangChain id and metadata are kept as JSON in its source. Its memory
id is derived from the collection and the LangChain id, so adding a document again with the same
id is a no-op, and with other content replaces it (graphsvc refuses other content under an
existing id, so the old memory is forgotten first, with its links: two requests, not one atomic
write).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any
from uuid import uuid4

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from pydantic import ValidationError

from graphsvc.client import DEFAULT_URL, AsyncGraphsvcClient, GraphsvcClient
from graphsvc.errors import BadInputError, validation_message
from graphsvc.model import MemoryInput
from graphsvc_langchain import _io
from graphsvc_langchain._codec import (
    bounded_source,
    checked_tag,
    document_id,
    read_source,
)
from graphsvc_langchain._connection import DEFAULT_TIMEOUT, Connection
from graphsvc_langchain._filters import matches

KIND = "document"
SOURCE_PREFIX = "langchain:"


class GraphsvcVectorStore(VectorStore):
    """A LangChain vector store whose documents are graphsvc memories.

    Constructing it does no I/O; each operation opens and closes its own connection unless
    ``client`` / ``async_client`` are given.

    Args:
        url: graphsvc's GraphQL endpoint.
        api_key: the key (it decides the graphsvc namespace the documents live in).
        collection: the documents' collection, kept as the tag ``lc:<collection>``: searches,
            reads and ``delete()`` see only this collection's documents.
        embeddings: optional and unused (graphsvc encodes texts itself).
        min_score: passed to graphsvc's bundle as ``minScore``: 0 (the default) ranks every
            memory recall reaches, as a vector store does; None lets graphsvc abstain (no
            documents) when its best score is below the stage's threshold.
        stage: graphsvc's scoring stage (``default``, ``recent``, ``exact``).
        wait_for_vectors: each write answers once its documents' vectors are stored, so a
            search right after it finds them by meaning, as a vector store's caller expects
            (True, the default); False writes at lexical speed and the vectors follow from
            graphsvc's vector queue (words find the documents at once, meaning a moment later).
        timeout: seconds per request.
        client / async_client: graphsvc clients to use instead of new ones.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        collection: str = "langchain",
        embeddings: Embeddings | None = None,
        min_score: float | None = 0.0,
        stage: str | None = None,
        wait_for_vectors: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        client: GraphsvcClient | None = None,
        async_client: AsyncGraphsvcClient | None = None,
    ) -> None:
        self.collection = collection
        self.tag = checked_tag(f"lc:{collection}", "the collection name")
        self.min_score = min_score
        self.stage = stage
        self.wait_for_vectors = wait_for_vectors
        self._embeddings = embeddings
        self._connection = Connection(
            url, api_key=api_key, timeout=timeout, client=client, async_client=async_client
        )

    @property
    def embeddings(self) -> Embeddings | None:
        """The embeddings given, if any: graphsvc does the encoding and never uses them."""
        return self._embeddings

    # -- the plans -------------------------------------------------------------------------------

    def _inputs(
        self,
        texts: Iterable[str],
        metadatas: Sequence[dict[str, Any]] | None,
        ids: Sequence[str | None] | None,
    ) -> tuple[list[str], list[MemoryInput]]:
        """The LangChain ids (made for documents without one) and the memories to write (the
        last of several documents with one id wins)."""
        out: list[str] = []
        by_id: dict[str, MemoryInput] = {}
        texts = list(texts)
        for name, given in (("ids", ids), ("metadatas", metadatas)):
            if given is not None and len(given) != len(texts):
                raise BadInputError(f"{len(given)} {name} for {len(texts)} texts: give one each")
        for n, text in enumerate(texts):
            given = ids[n] if ids is not None else None
            doc_id = given if given else str(uuid4())
            metadata = metadatas[n] if metadatas is not None else {}
            source = bounded_source(
                SOURCE_PREFIX, {"id": doc_id, "metadata": metadata}, f"the metadata of text {n}"
            )
            try:
                memory = MemoryInput(
                    id=document_id(self.collection, doc_id),
                    text=text,
                    kind=KIND,
                    tags=(self.tag,),
                    source=source,
                )
            except ValidationError as exc:
                raise BadInputError(f"text {n}: {validation_message(exc)}") from exc
            by_id.pop(doc_id, None)
            by_id[doc_id] = memory
            out.append(doc_id)
        return out, list(by_id.values())

    def _write(self, doc_ids: list[str], memories: list[MemoryInput]) -> _io.Plan[list[str]]:
        existing = yield from _io.read([m.id for m in memories if m.id is not None])
        stale = [
            m.id
            for m in memories
            if m.id in existing
            and (existing[m.id].text, existing[m.id].source, existing[m.id].tags)
            != (m.text, m.source, m.tags)
        ]
        yield from _io.forget([i for i in stale if i is not None])
        yield from _io.remember(memories, self.wait_for_vectors)
        return doc_ids

    def _document(self, memory: _io.Stored) -> Document | None:
        """The document a memory holds, or None when it is not one of this collection's."""
        if self.tag not in memory.tags:
            return None
        payload = read_source(SOURCE_PREFIX, memory.source)
        if payload is None:
            return Document(id=str(memory.id), page_content=memory.text)
        return Document(id=payload["id"], page_content=memory.text, metadata=payload["metadata"])

    def _get(self, ids: Sequence[str]) -> _io.Plan[list[Document]]:
        wanted = [document_id(self.collection, doc_id) for doc_id in ids]
        found = yield from _io.read(wanted)
        documents = []
        for memory_id in dict.fromkeys(wanted):
            memory = found.get(memory_id)
            document = None if memory is None else self._document(memory)
            if document is not None:
                documents.append(document)
        return documents

    def _delete(self, ids: Sequence[str] | None) -> _io.Plan[bool]:
        if ids is None:
            yield from _io.erase_tag(self.tag)
            return True
        found = yield from _io.read([document_id(self.collection, doc_id) for doc_id in ids])
        yield from _io.forget([i for i, memory in found.items() if self.tag in memory.tags])
        return True

    def _search(
        self, query: str, k: int, filter: dict[str, Any] | None
    ) -> _io.Plan[list[tuple[Document, float]]]:
        results: list[tuple[Document, float]] = []
        if k <= 0:
            return results
        ranking = yield from _io.ranked(query, min_score=self.min_score, stage=self.stage)
        for part in _io.chunks(ranking, _io.ALIASES):
            found = yield from _io.read([memory_id for memory_id, _ in part])
            for memory_id, score in part:
                memory = found.get(memory_id)
                document = None if memory is None else self._document(memory)
                if document is None or (filter and not matches(document.metadata, filter)):
                    continue
                results.append((document, score))
                if len(results) == k:
                    return results
        return results

    # -- VectorStore ------------------------------------------------------------------------------

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Write texts as memories; their ids (made for texts without one).

        Raises:
            BadInputError: a text graphsvc refuses (empty, too long) or metadata that is not JSON
                or takes more than 512 characters with its id; nothing is written then.
        """
        doc_ids, memories = self._inputs(texts, metadatas, ids)
        return self._connection.run(self._write(doc_ids, memories))

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        doc_ids, memories = self._inputs(texts, metadatas, ids)
        return await self._connection.arun(self._write(doc_ids, memories))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Forget the documents of ``ids`` (ids not stored are no error); with None, every
        document of the collection (graphsvc's erase of its tag)."""
        return self._connection.run(self._delete(ids))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        return await self._connection.arun(self._delete(ids))

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents of ``ids`` that exist, in the order asked (missing ids are left out)."""
        return self._connection.run(self._get(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return await self._connection.arun(self._get(ids))

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` best documents for ``query`` by graphsvc's recall, with its score.

        ``filter`` keeps documents whose metadata matches (``{"field": value}``, or operators
        ``$eq $ne $gt $gte $lt $lte $in $nin``); it is applied to graphsvc's ranking, which holds
        at most ``GRAPHSVC_RANKED_LIMIT`` memories (50 by default), so a filter that few of them
        pass can return fewer than ``k``.
        """
        return self._connection.run(self._search(query, k, filter))

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return await self._connection.arun(self._search(query, k, filter))

    def similarity_search(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter)]

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        found = await self.asimilarity_search_with_score(query, k, filter)
        return [doc for doc, _ in found]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # graphsvc's scores are already relevances in [0, 1], 1 best.
        return _identity

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> GraphsvcVectorStore:
        """A store (``kwargs`` are the constructor's) with ``texts`` added."""
        store = cls(embeddings=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


def _identity(score: float) -> float:
    return score
