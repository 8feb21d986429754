"""The compact JSON forms of memories, links, beliefs, events, vector models and vectors in the
mirror's log and version-2 snapshot (faster than pydantic's for the log's hot path); they are read
back into the compact tables by :mod:`~graphsvc.store.mirror.table`."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

from graphsvc.dense import VectorModel
from graphsvc.model import Belief, ContextEvent, Link, Memory


def _dt(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _memory_row(m: Memory) -> list[Any]:
    occurred, invalidated = m.occurred_at, m.invalidated_at
    return [
        str(m.id), m.text, m.kind, None if occurred is None else occurred.isoformat(),
        m.recorded_at.isoformat(), None if invalidated is None else invalidated.isoformat(),
        list(m.tags), m.source, m.confidence, m.tokens, list(m.terms),
    ]  # fmt: skip


def _link_row(lk: Link) -> list[Any]:
    return [str(lk.source), str(lk.target), lk.kind.value, lk.weight, _dt(lk.created_at), lk.note]


def _belief_row(b: Belief) -> dict[str, Any]:
    return b.model_dump(mode="json")


def _event_row(e: ContextEvent) -> dict[str, Any]:
    return e.model_dump(mode="json")


def _model_row(model: VectorModel | None) -> dict[str, Any] | None:
    return None if model is None else {"id": model.model_id, "dimension": model.dimension}


def _model_from_row(row: dict[str, Any] | None) -> VectorModel | None:
    if row is None:
        return None
    model_id, dimension = row["id"], row["dimension"]
    if not isinstance(model_id, str) or not isinstance(dimension, int) or dimension < 1:
        raise ValueError(f"not a vector model: {row!r}")
    return VectorModel(model_id, dimension)


def _vector_rows(vectors: Iterable[tuple[UUID, bytes]]) -> list[list[str]]:
    """Vectors as ``[id, base64 of the int8 codes]`` pairs (a log record's form)."""
    return [[str(mid), base64.b64encode(codes).decode("ascii")] for mid, codes in vectors]
