"""A query's codes, encoded once per request: the encoder's thread, its batches and a cache.

:class:`QueryEncoder` turns a query into the future of its stored codes (:meth:`QueryEncoder.soon`)
when the recall pipeline analyses it (:class:`~graphsvc.recall.query.Query`), so the encoding runs
(without the GIL) while the lexical ranking does; whoever needs the codes waits on that one future.
Repeated queries are answered from a cache of their codes. Underneath, :class:`QueryBatcher` runs
the encoder on one thread of its own, concurrent requests' queries in one call.

No I/O: the one side effect is that thread, which the pipeline's owner stops
(:meth:`QueryEncoder.close`).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from graphsvc.embedding.codes import stored_codes
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import tokenizes_apart

#: Most queries in one call of the encoder (shared among its workers). Small batches: the first
#: queries of a batch are not held back long by the last ones, and the encoder is as fast per
#: text at 4 to 8 texts as at 32 (:data:`~graphsvc.embedding.encoder.DEFAULT_BATCH_SIZE`).
QUERY_BATCH = 8
#: Longest a submission waits for an idle encoder's thread to take it (seconds): the handoff
#: takes about a tenth of a millisecond on a quiet machine; on a busy one the bound keeps the
#: submitter from waiting longer than the switch interval it saves.
HANDOFF_WAIT = 0.002


class QueryBatcher:
    """Encodes queries on one worker thread: every query waiting when the encoder is free goes
    into its next call (at most ``max_batch``), so concurrent requests share the encoder's
    batches instead of queueing for it one by one; a text asked again while it is waiting or
    being encoded is encoded once. A batch that fails is retried one query at a time, so a
    failure reaches only the callers whose query fails. Batching never changes a row's bits
    (:class:`~graphsvc.embedding.encoder.Embedder`).

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
        prepare: Callable[[str], Any] | None = None,
    ) -> None:
        self._encode = encode
        self._prepare = prepare
        self._max_batch = max_batch
        self._ready = threading.Condition()
        self._waiting: dict[str, Future[bytes]] = {}  # in arrival order
        self._items: dict[str, Any] = {}  # what encode takes for each waiting text
        self._idle = False  # the thread waits for work
        self._taken: threading.Event | None = None  # set when the thread takes what waits
        self._running: dict[str, Future[bytes]] = {}  # in the encoder now
        self._thread: threading.Thread | None = None
        self._closing = False

    def submit(self, text: str) -> Future[bytes]:
        """The future codes of ``text``."""
        with self._ready:
            future = self._known(text)
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
            future = self._known(text)  # another thread may have asked meanwhile
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

    def _known(self, text: str) -> Future[bytes] | None:
        """The future of ``text`` when it waits or is being encoded. Call under
        ``self._ready``."""
        return self._waiting.get(text) or self._running.get(text)

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


class QueryEncoder:
    """The codes of queries for the recall pipeline, with the encoder of ``dense``: each query
    encoded once on the encoder's thread (:class:`QueryBatcher`, in one call with concurrent
    requests' queries), the last ``dense.query_cache`` queries' codes kept for repeated ones.
    An encoder that tokenises apart is handed token ids, tokenised in the asking thread."""

    def __init__(self, dense: DenseRecall) -> None:
        self._dense = dense
        self._size = dense.query_cache
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        embedder = dense.embedder
        if tokenizes_apart(embedder):
            tokens = embedder
            self._batcher = QueryBatcher(
                lambda items: stored_codes(tokens.embed_tokens(items)),
                max_batch=QUERY_BATCH,
                prepare=lambda text: tokens.tokenize([text], query=True)[0],
            )
        else:
            self._batcher = QueryBatcher(
                lambda texts: dense.codes(texts, query=True), max_batch=QUERY_BATCH
            )

    def soon(self, text: str, namespace: str | None = None) -> Future[bytes] | None:
        """The future codes of the query ``text``: answered at once when it was asked recently,
        else encoding now. None when recall is lexical-only, or (with ``namespace``) when that
        namespace was last found lexical (:meth:`DenseRecall.found_lexical`) and the query is
        not cached: a caller may ask before it has asked the store whether the namespace is
        answered by meaning, and asks again without ``namespace`` when it is."""
        if self._dense.embedder is None:
            return None
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                answered: Future[bytes] = Future()
                answered.set_result(hit)
                return answered
        if namespace is not None and self._dense.found_lexical(namespace):
            return None
        future = self._batcher.submit(text)
        if self._size > 0:
            future.add_done_callback(lambda done: self._keep(text, done))
        return future

    def _keep(self, text: str, done: Future[bytes]) -> None:
        """Cache the codes of ``text`` once they are known (a failure is not kept)."""
        if done.cancelled() or done.exception() is not None:
            return
        with self._lock:
            self._cache[text] = done.result()
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)

    def close(self) -> None:
        """Stop the encoder's thread (a later query starts it again)."""
        self._batcher.close()


__all__ = ["HANDOFF_WAIT", "QUERY_BATCH", "QueryBatcher", "QueryEncoder"]
