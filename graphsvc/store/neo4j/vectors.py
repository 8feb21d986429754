"""Dense recall's storage on Neo4j (:class:`~graphsvc.store.base.VectorStorage`): the vector model
of each namespace and the vectors on its memories. How ``similar`` searches them is in
:mod:`~graphsvc.store.neo4j.candidates`.

A namespace's model is a ``:VectorModel {namespace, modelId, dimension}`` node (kept by an erase of
everything: it is the namespace's setting, not its data). A memory's vector is the property
``vector_<d>`` (``d`` its dimension), written with ``db.create.setNodeVectorProperty`` (float32)
from the int8 codes of :mod:`graphsvc.embedding.codes`, beside ``vectorDimension = d``, which only
memories with a vector have (the ``memory_namespace_vector`` index finds them). Each dimension has
its own vector index, ``memory_vector_<d>`` (cosine, quantization off), created when a model of that
dimension is first set and again at open if missing; namespaces with different models coexist.
``NamespaceStat.vectors`` counts a namespace's vectors exactly, in the transaction of every write
and delete. A vector is a property of its memory: forget, erase and eviction take it with the node.
Writes that store vectors or change the model lock the namespace's ``NamespaceStat`` first, so a
model never changes under a transaction storing vectors of the old."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

import numpy as np
from neo4j import Transaction
from neo4j.exceptions import Neo4jError

from graphsvc.embedding.codes import VectorModel
from graphsvc.errors import BadInputError, GraphsvcError
from graphsvc.store.base import VectorStorage
from graphsvc.store.neo4j.boundary import Neo4jBoundary, tx_query
from graphsvc.store.neo4j.counts import bump_counts
from graphsvc.store.vectors import bad_model, no_vector_model, vectors_in_the_way, wrong_length

#: Neo4j's vector index and vector functions accept 1 to 4096 dimensions.
MAX_DIMENSION = 4096
#: How long opening or setting a model waits for a new vector index to come online (seconds).
INDEX_WAIT = 120
#: What Neo4j says when a concurrent transaction created the same index first.
RULE_EXISTS = "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists"


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


def store_vectors(
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
    model = vector_model_from_row(tx_query(tx, "lock_vector_state", ns=namespace)[0])
    if model is None:
        raise no_vector_model(namespace)
    dimension = model.dimension
    rows = _codes_rows(vectors, namespace, model)
    if only is not None:
        rows = [row for row in rows if row["id"] in only]
    if not rows:
        return 0, 0
    result = tx_query(
        tx,
        "store_vectors",
        ns=namespace,
        rows=rows,
        property=vector_property(dimension),
        dimension=dimension,
        replace=replace,
    )[0]
    return int(result["stored"]), int(result["added"])


class Neo4jVectors(VectorStorage):
    """Vector models and vectors through the store's boundary."""

    def __init__(self, boundary: Neo4jBoundary) -> None:
        self._boundary = boundary

    def _ensure_vector_index(self, dimension: int) -> None:
        """Create the vector index of a dimension unless it exists, and wait until it is online
        (a schema transaction of its own: Neo4j does not mix schema and data writes)."""
        name = vector_index(dimension)

        def work(tx: Transaction) -> None:
            tx_query(
                tx,
                "create_vector_index",
                spliced={"dimension": dimension},
                name=name,
                dimension=dimension,
            )

        try:
            self._boundary.write(work)
        except GraphsvcError as exc:
            # IF NOT EXISTS is checked per transaction: another process (a worker of
            # `graphsvc serve --workers`) may have created it first. Then it exists: wait for it.
            cause = exc.__cause__
            if not (isinstance(cause, Neo4jError) and cause.code == RULE_EXISTS):
                raise
        self._boundary.read("await_index", name=name, seconds=INDEX_WAIT)

    def ensure_vector_indexes(self) -> None:
        """At open: the index of every dimension a namespace's model has (idempotent; a database
        without vectors has none to make)."""
        for row in self._boundary.read("vector_dimensions"):
            self._ensure_vector_index(int(row["dimension"]))

    def vector_model(self, namespace: str) -> VectorModel | None:
        return vector_model_from_row(self._boundary.read("vector_state", ns=namespace)[0])

    def vector_count(self, namespace: str) -> int:
        return int(self._boundary.read("vector_state", ns=namespace)[0]["vectors"])

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
            state = tx_query(tx, "lock_vector_state", ns=namespace)[0]
            current = vector_model_from_row(state)
            if current == model:
                return
            if model is not None and int(state["vectors"]) > 0:
                raise vectors_in_the_way(namespace, int(state["vectors"]), model, current)
            tx_query(
                tx,
                "set_vector_model",
                ns=namespace,
                modelId=None if model is None else model.model_id,
                dimension=None if model is None else model.dimension,
            )

        self._boundary.write(work)

    def set_vectors(self, namespace: str, vectors: Mapping[UUID, bytes]) -> int:
        def work(tx: Transaction) -> int:
            stored, added = store_vectors(tx, namespace, vectors, replace=True)
            if added:
                bump_counts(tx, namespace, vectors=added)
            return stored

        return self._boundary.write(work)

    def clear_vectors(self, namespace: str, limit: int) -> int:
        if limit <= 0:
            return 0

        def work(tx: Transaction) -> int:
            return int(tx_query(tx, "clear_vectors", ns=namespace, limit=limit)[0]["removed"])

        return self._boundary.write(work)
