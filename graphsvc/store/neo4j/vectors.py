"""Dense recall on Neo4j: the vector model of each namespace, the vectors on its memories, and
``similar`` (candidates from a vector index or a scan, re-scored exactly here).

Storage. A namespace's model is a ``:VectorModel {namespace, modelId, dimension}`` node (kept by
an erase of everything: it is the namespace's setting, not its data). A memory's vector is the
property ``vector_<d>`` (``d`` its dimension), written with ``db.create.setNodeVectorProperty``
(float32) from the int8 codes of :mod:`graphsvc.dense`, beside ``vectorDimension = d``, which only
memories with a vector have (the ``memory_namespace_vector`` index finds them). Each dimension has
its own vector index, ``memory_vector_<d>`` (cosine, quantization off), created when a model of
that dimension is first set and again at open if missing; namespaces with different models
coexist. ``NamespaceStat.vectors`` counts a namespace's vectors exactly, in the transaction of
every write and delete. A vector is a property of its memory: forget, erase and eviction take it
with the node. Writes that store vectors or change the model lock the namespace's
``NamespaceStat`` first, so a model never changes under a transaction storing vectors of the old.

Recall. ``similar`` asks in one round trip for the model, the count, the candidates and the
vectors of the given ids (``cypher/similar.cypher``). A namespace of more than
:data:`EXACT_BELOW` vectors gets its candidates from the dimension's HNSW index (approximate, and
shared by every namespace of the dimension, so filtered by namespace), asked for
:data:`OVERFETCH` times ``k`` neighbours (Neo4j searches with ``ef`` equal to that count); a
smaller one is ranked whole in Cypher by Neo4j's float cosine. Only candidates that can reach the
``k`` best come back with their codes (Neo4j's cosine is within :data:`SLACK` of the exact one),
and they are re-scored exactly (:func:`graphsvc.dense.cosines`), the ``k`` best taken by
:func:`graphsvc.dense.top_k`: the embedded store's answer whenever the candidates hold the exact
``k`` best. :func:`next_ask` checks that they do, or asks again: the index for more (a crowded
index, ties at the boundary), then a scan; a scan with a floor fetches
everything that can reach the ``k``-th, which is exact by construction. What is left
approximate is the index's own recall, as far as a neighbour HNSW missed can still hide above the
lowest row it returned. That is not rare at scale: on ``graphsvc bench --embed synthetic``'s
100,000 vectors (Neo4j 5.26, M 16, ef_construction 100), the index did not return a stored vector
among the 5 nearest of itself for 134 of 200 sampled memories (33 of 200 at 100), and this search
gives the exact top 10 for 71 of the bench's 100 queries (its word-hash vectors are a hard case:
on MiniLM vectors of real text, every BEAM turn, it gave it for all 400 BEAM questions). A
namespace of at most :data:`EXACT_BELOW` vectors is exact.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np
from neo4j import Transaction
from neo4j.exceptions import Neo4jError

from graphsvc.embedding.codes import VectorModel, cosines, top_k, with_given
from graphsvc.errors import BadInputError, GraphsvcError, StoreCorruptError
from graphsvc.store.base import (
    PendingVector,
    QueueLease,
    VectorBacklog,
    bad_model,
    no_vector_model,
    vectors_in_the_way,
    wrong_length,
)
from graphsvc.store.neo4j.boundary import Neo4jBoundary

#: Namespaces with at most this many vectors are scanned exactly in Cypher instead of asking the
#: (approximate, shared) vector index.
EXACT_BELOW = 2_000
#: The index is first asked for ``OVERFETCH * k`` neighbours (at least :data:`MIN_FETCH`); Neo4j
#: searches its HNSW graph with ``ef`` equal to that count.
OVERFETCH = 40
MIN_FETCH = 100
#: How much more the index is asked for when its answer is not enough (at least).
GROW = 8
#: The most neighbours one index query asks for; past it the namespace is scanned.
MAX_FETCH = 10_000
#: How much Neo4j's float32 cosine of integer codes may differ from the exact one (cosine
#: units; measured: at most about 1e-7, in the scan and in the index).
SLACK = 1e-4
#: How many times the index is asked again (for more) before the namespace is scanned.
INDEX_RETRIES = 3
#: Neo4j's vector index and vector functions accept 1 to 4096 dimensions.
MAX_DIMENSION = 4096
#: How long opening or setting a model waits for a new vector index to come online (seconds).
INDEX_WAIT = 120
#: What Neo4j says when a concurrent transaction created the same index first.
RULE_EXISTS = "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists"
#: A scan with a floor keeps every vector above it (LIMIT needs a number).
NO_LIMIT = 2**62
#: Memories a transaction of the vector queue's backfill reads (backfill_vector_queue.cypher).
QUEUE_PAGE = 10_000

logger = logging.getLogger(__name__)


def vector_property(dimension: int) -> str:
    """The Memory property that holds a vector of this dimension."""
    return f"vector_{dimension}"


def vector_index(dimension: int) -> str:
    """The name of the vector index of this dimension."""
    return f"memory_vector_{dimension}"


def vector_model_from_row(row: Any) -> VectorModel | None:
    """The model a ``vector_state`` row names, or None."""
    if row["modelId"] is None or row["dimension"] is None:
        return None
    return VectorModel(model_id=row["modelId"], dimension=int(row["dimension"]))


def _codes_rows(
    vectors: Mapping[UUID, bytes], namespace: str, model: VectorModel
) -> list[dict[str, Any]]:
    """``store_vectors`` rows (codes as small integers: they cross Bolt in one or two bytes),
    sorted by id; BadInputError for a vector of another length."""
    rows = []
    for memory_id in sorted(vectors, key=str):
        data = vectors[memory_id]
        if len(data) != model.dimension:
            raise wrong_length(f"the vector of memory {memory_id}", len(data), namespace, model)
        rows.append({"id": str(memory_id), "codes": np.frombuffer(data, dtype=np.int8).tolist()})
    return rows


def _cosine(score: float) -> float:
    """A Neo4j similarity score, ``(1 + cosine) / 2``, as a cosine."""
    return 2.0 * score - 1.0


@dataclass(frozen=True)
class Ask:
    """One ``similar`` round trip: ``mode`` (``index`` or ``scan``; ``auto`` lets the query
    choose), how many rows it fetches, a scan's floor (a Neo4j score), and how many times the
    index has been asked so far."""

    mode: str
    fetch: int
    floor: float | None = None
    attempts: int = 0


@dataclass(frozen=True)
class Answer:
    """What a round trip said about its candidates: what ran, the rows it returned (the index's:
    every namespace of the dimension), how many were the namespace's, the lowest cosine among
    them (Neo4j's float one), and how many vectors the namespace holds."""

    mode: str
    returned: int
    mine: int
    least: float | None
    vectors: int


def next_ask(
    ask: Ask, answer: Answer, *, k: int, kth: float | None, zero: bool, first: int
) -> Ask | None:
    """What to ask next, or None when the candidates hold the exact ``k`` best.

    ``kth`` is the ``k``-th best exact cosine among every vector fetched so far (None: fewer
    than ``k``). A row the answer left out scores at most ``least + SLACK``: below ``kth`` it
    cannot be among the ``k`` best, ties included (for the index, as far as its search found the
    true neighbours). A scan that returned fewer rows than it fetched saw the whole namespace; one
    with a floor kept everything that can reach ``kth``; for a query of zeros every cosine is 0
    and a scan's order (then by id) is the exact one.

    A clear answer of the index is trusted even when its neighbourhood is flat (the ``k``-th
    best little above its lowest row: a query far from everything, where HNSW misses more).
    Asking again there (for 8 times as many, when the gap was under 0.1) gave the exact top 10
    for 82 of 100 bench queries instead of 71 at 2.9 times the time (58.6 against 20.5 ms a
    search, mean), and changed no packed capsule of the 100 bundles; on MiniLM vectors of every
    BEAM turn no question needed it.
    """
    clear = kth is not None and answer.least is not None and answer.least + SLACK < kth
    if answer.mode == "scan":
        if ask.floor is not None or answer.returned < ask.fetch or kth is None or clear or zero:
            return None
        return Ask("scan", NO_LIMIT, (1.0 + kth - SLACK) / 2.0, ask.attempts)
    # The index skips vectors of zeros (cosine 0): the k-th must be clearly positive.
    if kth is not None and kth > SLACK:
        exhausted = answer.returned < ask.fetch  # the index holds fewer vectors than asked
        if exhausted or clear:
            return None
    attempts = ask.attempts + 1
    # Grow by GROW, or by what the namespace's share of the answer says it takes to see 2k of it.
    grow = 16 if answer.mine == 0 else min(16, max(GROW, -(-2 * k // answer.mine)))
    fetch = min(ask.fetch * grow, MAX_FETCH)
    if attempts > INDEX_RETRIES or ask.fetch >= MAX_FETCH or fetch >= answer.vectors:
        return Ask("scan", first, None, attempts)
    return Ask("index", fetch, None, attempts)


class Neo4jVectors(Neo4jBoundary):
    """The vector methods of :class:`~graphsvc.store.neo4j.Neo4jStore` (a layer of it)."""

    # -- model and indexes -----------------------------------------------------------------------

    def _ensure_vector_index(self, dimension: int) -> None:
        """Create the vector index of a dimension unless it exists, and wait until it is online
        (a schema transaction of its own: Neo4j does not mix schema and data writes)."""
        name = vector_index(dimension)

        def work(tx: Transaction) -> None:
            self._tx(
                tx,
                "create_vector_index",
                spliced={"dimension": dimension},
                name=name,
                dimension=dimension,
            )

        try:
            self._write(work)
        except GraphsvcError as exc:
            # IF NOT EXISTS is checked per transaction: another process (a worker of
            # `graphsvc serve --workers`) may have created it first. Then it exists: wait for it.
            cause = exc.__cause__
            if not (isinstance(cause, Neo4jError) and cause.code == RULE_EXISTS):
                raise
        self._read("await_index", name=name, seconds=INDEX_WAIT)

    def _ensure_vector_indexes(self) -> None:
        """At open: the index of every dimension a namespace's model has (idempotent; a database
        without vectors has none to make)."""
        for row in self._read("vector_dimensions"):
            self._ensure_vector_index(int(row["dimension"]))

    def vector_model(self, namespace: str) -> VectorModel | None:
        return vector_model_from_row(self._read("vector_state", ns=namespace)[0])

    def vector_count(self, namespace: str) -> int:
        return int(self._read("vector_state", ns=namespace)[0]["vectors"])

    def set_vector_model(self, namespace: str, model: VectorModel | None) -> None:
        if self.vector_model(namespace) == model:
            return
        if model is not None:
            problem = bad_model(model)
            if problem is None and model.dimension > MAX_DIMENSION:
                problem = BadInputError(
                    f"vector model {model.model_id} has dimension {model.dimension}: Neo4j's "
                    f"vector index takes at most {MAX_DIMENSION}"
                )
            if problem is not None:
                raise problem
            self._ensure_vector_index(model.dimension)

        def work(tx: Transaction) -> None:
            state = self._tx(tx, "lock_vector_state", ns=namespace)[0]
            current = vector_model_from_row(state)
            if current == model:
                return
            if model is not None and int(state["vectors"]) > 0:
                raise vectors_in_the_way(namespace, int(state["vectors"]), model, current)
            self._tx(
                tx,
                "set_vector_model",
                ns=namespace,
                modelId=None if model is None else model.model_id,
                dimension=None if model is None else model.dimension,
            )

        self._write(work)

    # -- vectors ---------------------------------------------------------------------------------

    def _store_vectors(
        self,
        tx: Transaction,
        namespace: str,
        vectors: Mapping[UUID, bytes],
        *,
        replace: bool,
        only: set[str] | None = None,
    ) -> tuple[int, int]:
        """Store vectors in ``tx`` (locking the namespace's vector state first): the memories
        that got one and how many of them had none. ``only``: ids to store (others are checked
        and left out). BadInputError without a model or for a wrong length."""
        model = vector_model_from_row(self._tx(tx, "lock_vector_state", ns=namespace)[0])
        if model is None:
            raise no_vector_model(namespace)
        dimension = model.dimension
        rows = _codes_rows(vectors, namespace, model)
        if only is not None:
            rows = [row for row in rows if row["id"] in only]
        if not rows:
            return 0, 0
        result = self._tx(
            tx,
            "store_vectors",
            ns=namespace,
            rows=rows,
            property=vector_property(dimension),
            dimension=dimension,
            replace=replace,
        )[0]
        return int(result["stored"]), int(result["added"])

    def _bump_counts(
        self,
        tx: Transaction,
        ns: str,
        *,
        memories: int = 0,
        length: int = 0,
        vectors: int = 0,
        terms: int = 0,
        links: int = 0,
        beliefs: int = 0,
    ) -> int:
        """bump_namespace_stat with these deltas (locking the NamespaceStat); the namespace's
        memories after it. Every write that changes a namespace's counts goes through here."""
        row = self._tx(
            tx,
            "bump_namespace_stat",
            ns=ns,
            memories=memories,
            length=length,
            vectors=vectors,
            terms=terms,
            links=links,
            beliefs=beliefs,
        )[0]
        return int(row["memories"])

    def set_vectors(self, namespace: str, vectors: Mapping[UUID, bytes]) -> int:
        def work(tx: Transaction) -> int:
            stored, added = self._store_vectors(tx, namespace, vectors, replace=True)
            if added:
                self._bump_counts(tx, namespace, vectors=added)
            return stored

        return self._write(work)

    def clear_vectors(self, namespace: str, limit: int) -> int:
        if limit <= 0:
            return 0

        def work(tx: Transaction) -> int:
            return int(self._tx(tx, "clear_vectors", ns=namespace, limit=limit)[0]["removed"])

        return self._write(work)

    def namespaces(self) -> list[str]:
        return [row["namespace"] for row in self._read("namespaces")]

    # -- the vector queue ------------------------------------------------------------------------

    def pending_vectors(self, namespace: str, limit: int) -> list[PendingVector]:
        if limit <= 0:
            return []
        rows = self._read("pending_vectors", ns=namespace, limit=limit)
        # A memory forgotten or erased by another transaction while this one read it comes back
        # with no properties (read committed): it no longer waits, so it is left out.
        return [
            PendingVector(UUID(row["id"]), int(row["recordedUs"]), row["text"])
            for row in rows
            if row["id"] is not None
        ]

    def fill_vectors(
        self,
        namespace: str,
        model: VectorModel,
        vectors: Sequence[tuple[PendingVector, bytes]],
    ) -> int:
        rows: dict[str, dict[str, Any]] = {}
        for item, data in vectors:
            if len(data) != model.dimension:
                raise wrong_length(f"the vector of memory {item.id}", len(data), namespace, model)
            rows.setdefault(  # one row per memory (the first), so it is stored once
                str(item.id),
                {
                    "id": str(item.id),
                    "recordedUs": item.recorded_us,
                    "codes": np.frombuffer(data, dtype=np.int8).tolist(),
                },
            )
        if not rows:
            return 0

        def work(tx: Transaction) -> int:
            state = self._tx(tx, "lock_vector_state", ns=namespace)[0]
            if vector_model_from_row(state) != model:
                return 0  # the model changed (or is being replaced): these codes are stale
            stored = int(
                self._tx(
                    tx,
                    "fill_vectors",
                    ns=namespace,
                    rows=list(rows.values()),
                    property=vector_property(model.dimension),
                    dimension=model.dimension,
                )[0]["stored"]
            )
            if stored:
                self._bump_counts(tx, namespace, vectors=stored)
            return stored

        return self._write(work)

    def vector_backlogs(self) -> list[VectorBacklog]:
        return [
            VectorBacklog(
                row["namespace"],
                int(row["memories"]) - int(row["vectors"]),
                int(row["vectors"]),
                vector_model_from_row(row),
            )
            for row in self._read("vector_backlogs")
        ]

    def take_vector_queue(self, owner: str, seconds: float) -> bool:
        ms = max(1, round(seconds * 1000))
        rows = self._write(lambda tx: self._tx(tx, "take_vector_queue", owner=owner, ms=ms))
        return bool(rows[0]["held"])

    def release_vector_queue(self, owner: str) -> None:
        self._write(lambda tx: self._tx(tx, "release_vector_queue", owner=owner))

    def vector_queue_lease(self) -> QueueLease | None:
        row = self._read("vector_queue_lease")[0]
        if row["owner"] is None or row["leftMs"] is None or int(row["leftMs"]) <= 0:
            return None
        return QueueLease(str(row["owner"]), int(row["leftMs"]) / 1000.0)

    def _backfill_vector_queue(self) -> None:
        """Put the memories without a vector of every namespace written before graphsvc kept
        its vector queue in it (backfill_vector_queue.cypher), a page a transaction; writes
        keep the queue from then on."""
        for row in self._read("queue_unkept_namespaces"):
            self._backfill_queue_of(str(row["namespace"]))

    def _backfill_queue_of(self, namespace: str) -> None:
        after, marked = "", 0
        while True:

            def work(tx: Transaction, after: str = after) -> list[Any]:
                return self._tx(
                    tx, "backfill_vector_queue", ns=namespace, after=after, page=QUEUE_PAGE
                )

            rows = self._write(work)
            if not rows:  # another process finished it
                return
            marked += int(rows[0]["marked"])
            if rows[0]["done"]:
                logger.info(
                    "namespace %r: put %d memory(ies) without a vector in the vector queue "
                    "once; writes keep the queue from now on",
                    namespace,
                    marked,
                )
                return
            after = str(rows[0]["last"])

    # -- dense recall ----------------------------------------------------------------------------

    def similar(
        self, namespace: str, query: bytes, k: int, ids: Sequence[UUID]
    ) -> list[tuple[UUID, float]]:
        """As :meth:`Store.similar`; how the ``k`` best are found and checked is in this module's
        docstring."""
        dimension = len(query)
        codes = np.frombuffer(query, dtype=np.int8)
        k = max(k, 0)
        first = max(k * OVERFETCH, MIN_FETCH) if k else 0
        base = {
            "ns": namespace,
            "dimension": dimension,
            "index": vector_index(dimension),
            "property": vector_property(dimension),
            "query": codes.tolist(),
            "zero": not bool(codes.any()),
            "exactBelow": EXACT_BELOW,
            "k": k,
            "margin": SLACK,
        }
        wanted = list(dict.fromkeys(str(i) for i in ids))
        row = self._read(
            "similar", **base, mode="auto" if k else "given", fetch=first, floor=None, ids=wanted
        )[0]
        model = vector_model_from_row(row)
        if model is None:
            return []
        if model.dimension != dimension:
            raise wrong_length("the query vector", dimension, namespace, model)
        pool: dict[str, list[float]] = {item["id"]: item["codes"] for item in row["given"]}
        given = [UUID(key) for key in pool]
        best: list[tuple[UUID, float]] = []
        if k:
            found = self._search(row, pool, codes, base, k, first)
            if found is None:  # the model changed between two round trips
                return []
            best = found
        uuids = [UUID(key) for key in pool]
        scores = dict(zip(uuids, self._exact(codes, list(pool.values())).tolist(), strict=True))
        return with_given(best, [(uuid, scores[uuid]) for uuid in given], k)

    def _search(
        self,
        row: Any,
        pool: dict[str, list[float]],
        codes: np.ndarray[Any, Any],
        base: Mapping[str, Any],
        k: int,
        first: int,
    ) -> list[tuple[UUID, float]] | None:
        """The exact ``k`` best, from the first answer ``row`` and as many more as
        :func:`next_ask` wants; every vector fetched is added to ``pool``. None when the model
        changed in between."""
        ask = Ask(mode=row["mode"], fetch=first)
        while True:
            if row["mode"] is None or row["dimension"] != base["dimension"]:
                return None
            part = row["indexed"] if row["mode"] == "index" else row["scanned"]
            for item in part["hits"]:
                pool[item["id"]] = item["codes"]
            uuids = [UUID(key) for key in pool]
            best = top_k(uuids, self._exact(codes, list(pool.values())), k)
            answer = Answer(
                mode=row["mode"],
                returned=int(part["returned"]),
                mine=int(part["mine"]),
                least=None if part["least"] is None else _cosine(float(part["least"])),
                vectors=int(row["vectors"]),
            )
            kth = best[-1][1] if len(best) == k else None
            following = next_ask(ask, answer, k=k, kth=kth, zero=base["zero"], first=first)
            if following is None:
                return best
            ask = following
            row = self._read(
                "similar", **base, mode=ask.mode, fetch=ask.fetch, floor=ask.floor, ids=[]
            )[0]

    @staticmethod
    def _exact(query: np.ndarray[Any, Any], rows: list[list[float]]) -> np.ndarray[Any, Any]:
        """Exact cosines of the query with stored vectors (floats that must be int8 codes)."""
        dimension = query.shape[0]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), dimension)
        if matrix.size and (
            np.any(np.rint(matrix) != matrix) or float(np.max(np.abs(matrix))) > 127.0
        ):
            raise StoreCorruptError(
                "a stored vector holds values that are not int8 codes: clear the namespace's "
                "vectors and run `graphsvc embed` again"
            )
        return cosines(query, matrix)
