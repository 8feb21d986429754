"""Whether a namespace is answered by meaning as well as by words: the service's side of dense
recall.

:class:`DenseRecall` holds the encoder (or the reason there is none), turns memory texts into
stored codes (:mod:`graphsvc.embedding.codes`), and decides per namespace whether dense recall
applies: only when the namespace's vectors come from this very model (``Store.vector_model``).
Vectors of another model are never mixed with this one's: that namespace is answered lexically,
and :meth:`DenseRecall.status` says why and what to run. A query's codes are the recall
pipeline's (:mod:`graphsvc.recall.query_encoder`), made with this encoder.

Nothing is loaded at construction; the model is opened on first use or by :meth:`prepare`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from graphsvc.embedding.codes import VectorModel, stored_codes
from graphsvc.embedding.encoder import Embedder, OnnxEmbedder, open_embedder
from graphsvc.embedding.registry import (
    Answerability,
    ModelUnavailableError,
    answerability,
    unrelated_cosine,
)
from graphsvc.errors import BadInputError
from graphsvc.settings import Settings
from graphsvc.store.base import Store

log = logging.getLogger("graphsvc.retrieval")

Retrieval = Literal["hybrid", "lexical"]
HYBRID: Retrieval = "hybrid"
LEXICAL: Retrieval = "lexical"

OFF_REASON = "dense recall is off (GRAPHSVC_EMBED=off)"
#: Namespaces whose last answer (dense or lexical) :class:`DenseRecall` remembers, so that a
#: query is not encoded for a namespace last found lexical (:meth:`DenseRecall.found_lexical`).
NAMESPACES_REMEMBERED = 4_096


@dataclass(frozen=True)
class DenseStatus:
    """How a namespace is answered: ``retrieval`` and, when lexical, why (``reason``, which says
    what to do); ``model`` is the encoder in use, if any."""

    retrieval: Retrieval
    model: str | None
    reason: str | None


class DenseRecall:
    """The encoder of a service, or why it has none.

    Args:
        embedder: the encoder; None for lexical-only recall.
        required: with ``embedder``, a model that cannot be loaded is an error (GRAPHSVC_EMBED=on)
            rather than a fall back to lexical recall (``auto``).
        reason: why there is no encoder, when ``embedder`` is None.
        cache_size: query codes kept for repeated queries (the recall pipeline's
            :class:`~graphsvc.recall.query_encoder.QueryEncoder` keeps them).
    """

    def __init__(
        self,
        embedder: Embedder | None,
        *,
        required: bool = False,
        reason: str = OFF_REASON,
        cache_size: int = 1_024,
    ) -> None:
        self._embedder = embedder
        self._required = required
        self._reason: str | None = None if embedder is not None else reason
        self._model: VectorModel | None = None
        self._lock = threading.Lock()
        self._query_cache = cache_size
        # Whether each namespace was answered by meaning when last asked (for_namespace): what
        # found_lexical(namespace) answers without asking the store.
        self._hybrid: dict[str, bool] = {}
        # Namespaces a write found holding this encoder's model (declare).
        self._declared: set[str] = set()

    @classmethod
    def from_settings(cls, settings: Settings) -> DenseRecall:
        """The encoder the settings name (nothing is read until first use).

        Raises:
            BadInputError: GRAPHSVC_EMBED_MODEL names no packaged model.
        """
        if settings.embed == "off":
            return cls(None, cache_size=settings.query_cache)
        embedder = settings_embedder(settings)
        return cls(embedder, required=settings.embed == "on", cache_size=settings.query_cache)

    @property
    def embedder(self) -> Embedder | None:
        """The encoder (None: recall is lexical-only)."""
        return self._embedder

    @property
    def query_cache(self) -> int:
        """How many queries' codes are kept for repeated queries (GRAPHSVC_QUERY_CACHE)."""
        return self._query_cache

    def found_lexical(self, namespace: str) -> bool:
        """Whether ``namespace`` was answered by words only when last asked (a namespace not
        asked yet was not): a caller may skip encoding a query for it before it has asked the
        store, and learns otherwise from :meth:`for_model`."""
        return not self._hybrid.get(namespace, True)

    def prepare(self) -> None:
        """Load the model now (servers call this at start, so the first query does not pay).

        Raises:
            ModelUnavailableError: the model is required (GRAPHSVC_EMBED=on) and cannot be loaded.
        """
        self.model()

    def model(self) -> VectorModel | None:
        """This encoder's model, loading it on first use; None when recall is lexical-only.

        Raises:
            ModelUnavailableError: the model is required and cannot be loaded.
        """
        if self._model is not None or self._embedder is None:
            return self._model
        with self._lock:
            if self._model is None and self._embedder is not None:
                try:
                    self._model = VectorModel(self._embedder.model_id, self._embedder.dimension)
                except ModelUnavailableError as exc:
                    if self._required:
                        raise
                    log.warning("dense recall is off: %s (GRAPHSVC_EMBED=auto)", exc)
                    self._reason = f"dense recall is off: {exc}"
                    self._embedder = None
            return self._model

    def unrelated_cosine(self) -> float:
        """The typical unrelated cosine of this encoder's model (0 when recall is lexical-only
        or the model is not a packaged one):
        :func:`graphsvc.embedding.registry.unrelated_cosine`."""
        model = self.model()
        return unrelated_cosine(model.model_id) if model is not None else 0.0

    def answerability(self) -> Answerability | None:
        """The answerability coefficients of this encoder's model (None when recall is
        lexical-only or the model has none): :func:`graphsvc.embedding.registry.answerability`."""
        model = self.model()
        return answerability(model.model_id) if model is not None else None

    def codes(
        self, texts: Sequence[str], *, query: bool = False, workers: int | None = None
    ) -> list[bytes]:
        """The stored codes of each memory's text, or of each query with ``query`` (the
        model's query instruction); the model must be loaded: see :meth:`model`. ``workers``:
        how many of the encoder's threads the call may use (1: the calling thread alone, for a
        caller with threads of its own: :class:`~graphsvc.service.vector_queue.VectorQueue`)."""
        embedder = self._embedder
        if embedder is None or not texts:
            return []
        if workers is not None and isinstance(embedder, OnnxEmbedder):
            return stored_codes(embedder.embed(list(texts), query=query, workers=workers))
        return stored_codes(embedder.embed(list(texts), query=query))

    def close(self) -> None:
        """Stop the encoder's threads (a later call starts them again)."""
        if isinstance(self._embedder, OnnxEmbedder):
            self._embedder.close()

    def for_namespace(self, store: Store, namespace: str, *, writing: bool) -> VectorModel | None:
        """The model whose vectors this namespace uses, when it is this encoder's: then dense
        recall applies. A namespace without a model takes this one on its first write (it has no
        vector yet); one whose vectors come from another model, or are being replaced, gets
        None (lexical recall, and writes store no vector)."""
        return self._remember(namespace, self._for_namespace(store, namespace, writing=writing))

    def declare(self, store: Store, namespace: str) -> None:
        """Before a write whose vectors the queue will make: give a namespace without a model
        this encoder's (:meth:`for_namespace`), so that the queue drains it. A namespace known
        to hold this model already is not asked again (nothing a write does depends on a model
        that changed since: the queue checks it when it stores)."""
        if self._embedder is None or namespace in self._declared:
            return
        if self.for_namespace(store, namespace, writing=True) is not None:
            with self._lock:
                if len(self._declared) >= NAMESPACES_REMEMBERED:
                    self._declared.clear()
                self._declared.add(namespace)

    def for_model(self, namespace: str, current: VectorModel | None) -> VectorModel | None:
        """As :meth:`for_namespace` for a read, given the namespace's model as the store
        answered it (:meth:`Store.recall_window`): this encoder's model when it is
        the namespace's, else None."""
        mine = self.model()
        return self._remember(namespace, mine if mine is not None and current == mine else None)

    def _remember(self, namespace: str, found: VectorModel | None) -> VectorModel | None:
        """``found``, after noting whether ``namespace`` is answered with vectors (what
        :meth:`found_lexical` answers)."""
        if self._hybrid.get(namespace) != (found is not None):
            with self._lock:
                if len(self._hybrid) >= NAMESPACES_REMEMBERED:
                    self._hybrid.clear()
                self._hybrid[namespace] = found is not None
        return found

    def _for_namespace(self, store: Store, namespace: str, *, writing: bool) -> VectorModel | None:
        mine = self.model()
        if mine is None:
            return None
        current = store.vector_model(namespace)
        if current == mine:
            return mine
        if current is None and writing:
            try:
                store.set_vector_model(namespace, mine)
            except BadInputError:
                return None  # vectors without a model: a replacement was interrupted
            return mine
        return None

    def backlog(
        self, current: VectorModel | None, vectors: int, memories: int
    ) -> tuple[int, str | None]:
        """For a namespace whose vector model is ``current``, holding ``vectors`` vectors for
        ``memories`` memories: how many of its memories wait for their vector (the queue this
        encoder drains: 0 when its vectors are another model's, or recall is lexical), and why
        recall by meaning is incomplete or off there, if it is (None: it is complete).

        Raises:
            ModelUnavailableError: the model is required and cannot be loaded.
        """
        mine = self.model()
        if mine is None:
            return 0, self._reason or OFF_REASON
        if current is None and vectors > 0:
            return 0, REPLACING
        if current is not None and current != mine:
            return 0, other_model(current, mine)
        pending = max(0, memories - vectors)
        if pending == 0:
            return 0, None
        if current is None:
            return pending, (
                f"{pending} memory(ies) have no vector (written without an encoder) and are "
                "found by words only: run `graphsvc embed` to encode them"
            )
        return pending, (
            f"{pending} memory(ies) wait for their vector (the vector queue): they are found by "
            "words only until it has encoded them"
        )

    def status(self, store: Store | None = None, namespace: str | None = None) -> DenseStatus:
        """How queries are answered: service-wide, or for one namespace."""
        mine = self.model()
        if mine is None:
            return DenseStatus(LEXICAL, None, self._reason or OFF_REASON)
        if store is None or namespace is None:
            return DenseStatus(HYBRID, mine.model_id, None)
        current = store.vector_model(namespace)
        if current == mine:
            return DenseStatus(HYBRID, mine.model_id, None)
        if current is None:
            if store.vector_count(namespace) > 0:
                return DenseStatus(LEXICAL, mine.model_id, REPLACING)
            # No vector and no model yet: the vector queue (or an inline write) declares it.
            return DenseStatus(HYBRID, mine.model_id, None)
        return DenseStatus(LEXICAL, mine.model_id, other_model(current, mine))


REPLACING = "the namespace's vectors are being replaced: run `graphsvc embed` to finish"


def other_model(current: VectorModel, mine: VectorModel) -> str:
    """Why a namespace whose vectors are ``current``'s is answered lexically by ``mine``."""
    return (
        f"the namespace's vectors come from {current.model_id}, not {mine.model_id}: run "
        "`graphsvc embed --rebuild` to replace them"
    )


def settings_embedder(settings: Settings) -> OnnxEmbedder:
    """The encoder the settings name (GRAPHSVC_EMBED_MODEL, _MODEL_DIR, _MODEL_HOME, _CHUNKS,
    _THREADS, _WORKERS); nothing is read until its first use.

    Raises:
        BadInputError: GRAPHSVC_EMBED_MODEL names no packaged model.
    """
    return open_embedder(
        settings.embed_model_dir,
        settings.embed_model,
        threads=settings.embed_threads,
        workers=settings.embed_workers,
        home=settings.embed_model_home,
        chunks=settings.embed_chunks,
    )
