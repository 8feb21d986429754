"""Whether a query is answered by meaning as well as by words: the service's side of dense recall.

:class:`DenseRecall` holds the encoder (or the reason there is none), turns query and memory texts
into stored codes (:mod:`graphsvc.dense`), keeps repeated queries' codes, and decides per
namespace whether dense recall applies: only when the namespace's vectors come from this very
model (``Store.vector_model``). Vectors of another model are never mixed with this one's: that
namespace is answered lexically, and :meth:`DenseRecall.status` says why and what to run.

Nothing is loaded at construction; the model is opened on first use or by :meth:`prepare`.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal

from graphsvc.dense import VectorModel, quantize, to_bytes
from graphsvc.embed import (
    Answerability,
    Embedder,
    ModelUnavailableError,
    OnnxEmbedder,
    Vectors,
    answerability,
    open_embedder,
    tokenizes_apart,
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
#: Most queries in one call of the encoder (shared among its workers).
QUERY_BATCH = 8
#: Longest a submission waits for an idle encoder's thread to take it (seconds): the handoff
#: takes about a tenth of a millisecond on a quiet machine; on a busy one the bound keeps the
#: submitter from waiting longer than the switch interval it saves.
HANDOFF_WAIT = 0.002
#: Namespaces whose last answer (dense or lexical) :class:`DenseRecall` remembers for prefetch.
NAMESPACES_REMEMBERED = 4_096


@dataclass(frozen=True)
class DenseStatus:
    """How a namespace is answered: ``retrieval`` and, when lexical, why (``reason``, which says
    what to do); ``model`` is the encoder in use, if any."""

    retrieval: Retrieval
    model: str | None
    reason: str | None


class QueryBatcher:
    """Encodes queries on one worker thread: every query waiting when the encoder is free goes
    into its next call (at most ``max_batch``), so concurrent requests share the encoder's
    batches instead of queueing for it one by one; a text asked again while it is waiting or
    being encoded is encoded once. A batch that fails is retried one query at a time, so a
    failure reaches only the callers whose query fails. Batching never changes a row's bits
    (:class:`~graphsvc.embed.Embedder`).

    A text submitted without ``collect`` (a prefetch) keeps its answer after it is encoded until
    a submission with ``collect`` takes it (at most ``kept`` such answers, the oldest dropped
    first), so a query prefetched early is not encoded again when its caller asks for it.

    ``prepare`` (default: the text itself) turns a text into what ``encode`` takes, in the
    submitting thread: for example its token ids, so the encoder's thread, which takes the GIL
    only between two calls of onnxruntime, has as little Python to run as possible.

    A submission that finds the encoder idle waits (at most :data:`HANDOFF_WAIT` seconds) until
    the encoder's thread has taken it. Otherwise the thread, woken while the submitter goes on
    with Python work (the lexical ranking), waits for the GIL for up to the interpreter's switch
    interval (5 ms) before the encoding even starts; the wait hands the GIL over at once.

    The thread starts with the first query and stops at :meth:`close`; a later query starts it
    again.
    """

    def __init__(
        self,
        encode: Callable[[list[Any]], list[bytes]],
        max_batch: int = 32,
        kept: int = 1_024,
        prepare: Callable[[str], Any] | None = None,
    ) -> None:
        self._encode = encode
        self._prepare = prepare
        self._max_batch = max_batch
        self._kept = kept
        self._ready = threading.Condition()
        self._waiting: dict[str, Future[bytes]] = {}  # in arrival order
        self._items: dict[str, Any] = {}  # what encode takes for each waiting text
        self._idle = False  # the thread waits for work
        self._taken: threading.Event | None = None  # set when the thread takes what waits
        self._running: dict[str, Future[bytes]] = {}  # in the encoder now
        self._prefetched: set[str] = set()  # submitted without collect, not yet collected
        self._done: OrderedDict[str, Future[bytes]] = OrderedDict()  # answered, not collected
        self._thread: threading.Thread | None = None
        self._closing = False

    def submit(self, text: str, *, collect: bool = True) -> Future[bytes]:
        """The future codes of ``text``; ``collect=False`` for a prefetch (see the class)."""
        with self._ready:
            future = self._known(text, collect)
        if future is not None:
            return future
        item: Any = text
        if self._prepare is not None:
            try:
                item = self._prepare(text)
            except BaseException as exc:  # the caller re-raises it from the future
                failed: Future[bytes] = Future()
                failed.set_exception(exc)
                return failed
        taken = None
        with self._ready:
            future = self._known(text, collect)  # another thread may have asked meanwhile
            if future is not None:
                return future
            future = self._waiting[text] = Future()
            self._items[text] = item
            if self._thread is None:
                self._closing = False
                self._idle = True  # it takes the first query as soon as it runs
                self._thread = threading.Thread(
                    target=self._run, name="graphsvc-query-encoder", daemon=True
                )
                self._thread.start()
            if self._idle:
                if self._taken is None:
                    self._taken = threading.Event()
                taken = self._taken
            self._ready.notify()
        if taken is not None:
            taken.wait(HANDOFF_WAIT)
        return future

    def _known(self, text: str, collect: bool) -> Future[bytes] | None:
        """The future of ``text`` when it waits, is being encoded or was prefetched; notes
        whether it is a prefetch. Call under ``self._ready``."""
        future = self._waiting.get(text) or self._running.get(text)
        if future is None:
            if not collect and text in self._done:
                return self._done[text]
            future = self._done.pop(text, None)
        if collect:
            self._prefetched.discard(text)
        else:
            self._prefetched.add(text)
        return future

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._waiting and not self._closing:
                    self._idle = True
                    self._ready.wait()
                self._idle = False
                if not self._waiting:  # closing, and nothing left to answer
                    self._thread = None
                    return
                texts = list(itertools.islice(self._waiting, self._max_batch))
                futures = [self._waiting.pop(text) for text in texts]
                items = [self._items.pop(text) for text in texts]
                self._running = dict(zip(texts, futures, strict=True))
                if self._taken is not None:
                    self._taken.set()
                    self._taken = None
            self._answer(items, futures)
            with self._ready:
                for text, future in self._running.items():
                    if text in self._prefetched:  # kept until its caller collects it
                        self._prefetched.discard(text)
                        self._done[text] = future
                while len(self._done) > self._kept:
                    self._done.popitem(last=False)
                self._running = {}

    def _answer(self, items: list[Any], futures: list[Future[bytes]]) -> None:
        try:
            codes = self._encode(items)
        except BaseException as exc:  # the callers re-raise it
            if len(items) == 1:
                futures[0].set_exception(exc)
            else:  # one query's failure is not its neighbours'
                for item, future in zip(items, futures, strict=True):
                    self._answer([item], [future])
            return
        for future, row in zip(futures, codes, strict=True):
            future.set_result(row)

    def close(self) -> None:
        """Answer what is waiting, then stop the thread."""
        with self._ready:
            thread = self._thread
            self._closing = True
            self._ready.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()


class DenseRecall:
    """The encoder of a service, or why it has none.

    Args:
        embedder: the encoder; None for lexical-only recall.
        required: with ``embedder``, a model that cannot be loaded is an error (GRAPHSVC_EMBED=on)
            rather than a fall back to lexical recall (``auto``).
        reason: why there is no encoder, when ``embedder`` is None.
        cache_size: query codes kept for repeated queries.
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
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_size = cache_size
        # Small batches: the first queries of a batch are not held back long by the last ones,
        # and the encoder is as fast per text at 4 to 8 texts as at 32 (embed.DEFAULT_BATCH_SIZE).
        # An encoder that tokenises apart is handed token ids, tokenised by the caller.
        if tokenizes_apart(embedder):
            tokens = embedder
            self._batcher = QueryBatcher(
                lambda items: _stored(tokens.embed_tokens(items)),
                max_batch=QUERY_BATCH,
                prepare=lambda text: tokens.tokenize([text], query=True)[0],
            )
        else:
            self._batcher = QueryBatcher(
                lambda texts: self.codes(texts, query=True), max_batch=QUERY_BATCH
            )
        # Whether each namespace was answered by meaning when last asked (for_namespace): what
        # prefetch(query, namespace) goes by without asking the store.
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
        or the model is not a packaged one): :func:`graphsvc.embed.unrelated_cosine`."""
        model = self.model()
        return unrelated_cosine(model.model_id) if model is not None else 0.0

    def answerability(self) -> Answerability | None:
        """The answerability coefficients of this encoder's model (None when recall is
        lexical-only or the model has none): :func:`graphsvc.embed.answerability`."""
        model = self.model()
        return answerability(model.model_id) if model is not None else None

    def codes(
        self, texts: Sequence[str], *, query: bool = False, workers: int | None = None
    ) -> list[bytes]:
        """The stored codes of each memory's text, or of each query with ``query`` (the
        model's query instruction); the model must be loaded: see :meth:`model`. ``workers``:
        how many of the encoder's threads the call may use (1: the calling thread alone, for a
        caller with threads of its own: :class:`~graphsvc.vector_queue.VectorQueue`)."""
        embedder = self._embedder
        if embedder is None or not texts:
            return []
        if workers is not None and isinstance(embedder, OnnxEmbedder):
            return _stored(embedder.embed(list(texts), query=query, workers=workers))
        return _stored(embedder.embed(list(texts), query=query))

    def prefetch(self, query: str, namespace: str | None = None) -> bool:
        """Start encoding ``query`` now, on the encoder's thread (onnxruntime runs without the
        GIL), so that it overlaps the lexical ranking; :meth:`query_codes` collects it. True
        when the query's codes are coming (or cached): recall by meaning may follow.

        With ``namespace``, nothing is encoded when that namespace was last found lexical
        (:meth:`for_namespace`): a caller may prefetch before it has asked the store, for
        example a server before its request waits for a store thread, so that concurrent
        requests' queries share the encoder's batches.
        """
        if self._embedder is None:
            return False
        with self._lock:
            if query in self._cache:
                return True
            if namespace is not None and not self._hybrid.get(namespace, True):
                return False
        self._batcher.submit(query, collect=False)
        return True

    def query_codes(self, query: str) -> bytes:
        """The codes of a query: from the cache when it was asked recently, else encoded on the
        encoder's thread, in one batch with the queries of concurrent requests.

        Raises:
            ModelUnavailableError: the model cannot be loaded or run.
        """
        with self._lock:
            hit = self._cache.get(query)
            if hit is not None:
                self._cache.move_to_end(query)
                return hit
        if self._embedder is None:
            return b""
        codes = self._batcher.submit(query).result()
        if self._cache_size > 0:
            with self._lock:
                self._cache[query] = codes
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return codes

    def close(self) -> None:
        """Stop the encoder's threads (a later query starts them again)."""
        self._batcher.close()
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
        :meth:`prefetch` reads to skip a namespace last found lexical)."""
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


def _stored(vectors: Vectors) -> list[bytes]:
    """The stored codes of each row of an encoder's float32 matrix."""
    return [to_bytes(row) for row in quantize(vectors)]
