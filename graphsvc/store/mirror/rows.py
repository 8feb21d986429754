"""The compact JSON forms of memories, links, beliefs, events, vector models and vectors in the
embedded store's log and version-2 snapshot (faster than pydantic's for the log's hot path); they
are read back into the compact tables by :mod:`~graphsvc.store.mirror.table`."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from itertools import chain
from operator import attrgetter
from typing import Any
from uuid import UUID

from graphsvc.embedding.codes import VectorModel
from graphsvc.model import Belief, ContextEvent, Link, Memory
from graphsvc.store.journal import orjson_writes_isoformat


def _dt(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def log_memory_row(m: Memory) -> list[Any]:
    return _memory_row_of(memory_fields(m))


#: A memory's fields in its log row's order (:func:`log_memory_row`), as the memory holds them.
MemoryFields = tuple[
    UUID,
    str,
    str,
    datetime | None,
    datetime,
    datetime | None,
    tuple[str, ...],
    str | None,
    float,
    int,
    tuple[str, ...],
    datetime | None,
    datetime | None,
]
memory_fields: Callable[[Memory], MemoryFields] = attrgetter(
    "id",
    "text",
    "kind",
    "occurred_at",
    "recorded_at",
    "invalidated_at",
    "tags",
    "source",
    "confidence",
    "tokens",
    "terms",
    "valid_from",
    "valid_until",
)


def log_memory_rows(
    fields: Sequence[MemoryFields], columns: Sequence[Sequence[Any]]
) -> Sequence[MemoryFields | list[Any]]:
    """The log rows of memories given as ``fields`` (and the same as ``columns``): the fields
    themselves, which the log's encoder (orjson) writes exactly as :func:`log_memory_row`'s strings
    and lists (``str(id)``, ``isoformat()``, tuples as lists); :func:`log_memory_row`'s own when a
    time is in a zone other than UTC (none is through the service)."""
    times = chain(columns[3], columns[4], columns[5], columns[11], columns[12]) if columns else ()
    if orjson_writes_isoformat(filter(None, times)):
        return fields
    return [_memory_row_of(row) for row in fields]


def _memory_row_of(row: MemoryFields) -> list[Any]:
    mid, text, kind, occurred, recorded, invalidated, tags, source, confidence, tokens, terms = row[
        :11
    ]
    since, until = row[11:]
    return [
        str(mid),
        text,
        kind,
        _dt(occurred),
        recorded.isoformat(),
        _dt(invalidated),
        list(tags),
        source,
        confidence,
        tokens,
        list(terms),
        _dt(since),
        _dt(until),
    ]


def log_link_row(lk: Link) -> list[Any]:
    return [str(lk.source), str(lk.target), lk.kind.value, lk.weight, _dt(lk.created_at), lk.note]


def log_belief_row(b: Belief) -> dict[str, Any]:
    return b.model_dump(mode="json")


def log_event_row(e: ContextEvent) -> dict[str, Any]:
    return e.model_dump(mode="json")


def log_model_row(model: VectorModel | None) -> dict[str, Any] | None:
    return None if model is None else {"id": model.model_id, "dimension": model.dimension}


def model_from_log_row(row: dict[str, Any] | None) -> VectorModel | None:
    if row is None:
        return None
    model_id, dimension = row["id"], row["dimension"]
    if not isinstance(model_id, str) or not isinstance(dimension, int) or dimension < 1:
        raise ValueError(f"not a vector model: {row!r}")
    return VectorModel(model_id, dimension)


def log_vector_rows(vectors: Iterable[tuple[UUID, bytes]]) -> list[list[str]]:
    """Vectors as ``[id, base64 of the int8 codes]`` pairs (a log record's form)."""
    return [[str(mid), base64.b64encode(codes).decode("ascii")] for mid, codes in vectors]
