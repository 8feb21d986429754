"""The values of the vector capabilities (:class:`~graphsvc.store.base.VectorStorage`,
:class:`~graphsvc.store.base.VectorQueue`) and the vector contract's words: both stores check and
say the same."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from graphsvc.embedding.codes import VectorModel
from graphsvc.errors import BadInputError


@dataclass(frozen=True, slots=True)
class PendingVector:
    """A memory that waits for its vector (:meth:`Store.pending_vectors`): its id, its
    ``recordedAt`` in microseconds (which names this very memory: one forgotten and written
    again under the same id is recorded at another instant) and the text to encode."""

    id: UUID
    recorded_us: int
    text: str


@dataclass(frozen=True, slots=True)
class VectorBacklog:
    """A namespace whose memories wait for vectors (:meth:`Store.vector_backlogs`): how many
    (its memories less its vectors), how many vectors it holds, and its vector model (None:
    not declared yet, or being replaced)."""

    namespace: str
    pending: int
    vectors: int
    model: VectorModel | None


@dataclass(frozen=True, slots=True)
class QueueLease:
    """Who drains the vector queue of a store (:meth:`Store.vector_queue_lease`): ``owner``
    (a process's own name for itself) and the seconds left before the lease lapses unless it
    is renewed."""

    owner: str
    seconds_left: float


# -- the vector contract's words (both stores say the same) --------------------------------------


def describe_model(model: VectorModel) -> str:
    """A model for messages."""
    return f"{model.model_id} (dimension {model.dimension})"


def no_vector_model(namespace: str) -> BadInputError:
    return BadInputError(
        f"namespace {namespace!r} has no vector model: set one (Store.set_vector_model; "
        "`graphsvc embed` does it) before storing vectors"
    )


def wrong_length(what: str, length: int, namespace: str, model: VectorModel) -> BadInputError:
    return BadInputError(
        f"{what} has {length} codes, but namespace {namespace!r} uses vector model "
        f"{describe_model(model)}: encode it with that model (graphsvc.embedding.codes.quantize)"
    )


def vectors_in_the_way(
    namespace: str, count: int, model: VectorModel, current: VectorModel | None
) -> BadInputError:
    what = "no model (being replaced)" if current is None else describe_model(current)
    return BadInputError(
        f"namespace {namespace!r} stores {count} vector(s) of its model in force, {what}: "
        f"remove them (Store.clear_vectors until it answers 0; `graphsvc embed --rebuild` does "
        f"it) before setting vector model {describe_model(model)}"
    )


def bad_model(model: VectorModel) -> BadInputError | None:
    """Why a model cannot be declared, or None."""
    if not model.model_id or not model.model_id.strip():
        return BadInputError("a vector model needs a model id (the encoder's name)")
    if model.dimension < 1:
        return BadInputError(
            f"vector model {model.model_id} has dimension {model.dimension}: it must be at least 1"
        )
    return None


__all__ = [
    "PendingVector",
    "QueueLease",
    "VectorBacklog",
    "bad_model",
    "describe_model",
    "no_vector_model",
    "vectors_in_the_way",
    "wrong_length",
]
