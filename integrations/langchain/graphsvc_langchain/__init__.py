"""LangChain and LangGraph over graphsvc: a retriever, a vector store and a long-term memory store,
each talking to a graphsvc server through :mod:`graphsvc.client` (sync and async).

- :class:`GraphsvcRetriever`: a question in, the bundle's memories out as ``Document``s, with
  graphsvc's account of what memory does not cover in their metadata.
- :class:`GraphsvcVectorStore`: a ``VectorStore`` whose documents are memories; graphsvc encodes
  texts itself, so ``embeddings`` is optional and unused.
- :class:`GraphsvcStore`: LangGraph's ``BaseStore``; namespaces are tags, search is graphsvc's
  recall.

What each maps to in graphsvc, and what cannot round-trip: docs/integrations.md.
"""

from __future__ import annotations

from graphsvc_langchain.retriever import GraphsvcRetriever
from graphsvc_langchain.store import GraphsvcStore
from graphsvc_langchain.vectorstore import GraphsvcVectorStore

__all__ = ["GraphsvcRetriever", "GraphsvcStore", "GraphsvcVectorStore"]
