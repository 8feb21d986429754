"""Conversions between Neo4j records and graphsvc's domain models, and the keys and full-text
queries that the named queries take."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, overload
from uuid import UUID

import neo4j
import numpy as np

from graphsvc.errors import GraphsvcError, StoreCorruptError
from graphsvc.model import (
    AsOf,
    ContextEvent,
    ContextEventKind,
    Link,
    LinkKind,
    Memory,
    Successor,
    as_utc,
    construct,
)
from graphsvc.store.candidates import EPOCH, Candidate, CandidateColumns, micros

KEY_SEP = "\x1f"
# What recall_columns.cypher returns for a missing occurredUs: below any time a datetime can hold
# (year 1 is about -6.2e16 microseconds), so it never stands for a real one.
NO_OCCURRED = -(2**63)
# The columns of recall_columns.cypher that hold one entry per candidate.
COLUMNS = ("ids", "tf", "lengths", "recorded", "occurred", "confidence")
# Up to this many query terms, a candidate's frequencies are counted with list.count (in C).
FEW_TERMS = 8


def namespaced_key(namespace: str, name: str) -> str:
    return f"{namespace}{KEY_SEP}{name}"


def utc_datetime(value: Any) -> datetime | None:
    """A Neo4j temporal value as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, neo4j.time.DateTime):
        value = value.to_native()
    if not isinstance(value, datetime):
        raise GraphsvcError(f"expected a DateTime from Neo4j, got {type(value).__name__}")
    return as_utc(value)


def memory_props(memory: Memory) -> dict[str, Any]:
    return {
        "id": str(memory.id),
        "text": memory.text,
        "kind": memory.kind,
        "invalidatedAt": memory.invalidated_at,
        "tags": list(memory.tags),
        "source": memory.source,
        "confidence": memory.confidence,
        "tokens": memory.tokens,
        # The analysed terms, in order, as one string: a list of strings costs the driver and the
        # store far more to move (memories written before termSeq have the list `terms`).
        "termSeq": " ".join(memory.terms),
        "length": len(memory.terms),
        # What the full-text index sees: the distinct analysed terms, space separated.
        "termText": " ".join(sorted(set(memory.terms))),
        # Epoch microseconds: integers cross Bolt far faster than DateTimes (create_memories makes
        # the DateTime copies, recordedAt and occurredAt, the readable form for people and Cypher).
        "recordedUs": micros(memory.recorded_at),
        "occurredUs": None if memory.occurred_at is None else micros(memory.occurred_at),
        # The validity interval as written (create_memories makes the DateTime copies); absent
        # on memories written before validity intervals, which is the same as none.
        "validFromUs": None if memory.valid_from is None else micros(memory.valid_from),
        "validUntilUs": None if memory.valid_until is None else micros(memory.valid_until),
    }


def _time(props: dict[str, Any], name: str) -> datetime | None:
    """A time property, from its epoch-microseconds copy when the query returned that."""
    micros = props.get(f"{name}Us")
    if micros is not None:
        return _frommicros(micros)
    return utc_datetime(props.get(f"{name}At"))


def _valid(props: dict[str, Any], name: str) -> datetime | None:
    """A validity bound: from its epoch-microseconds copy, else its DateTime."""
    micros = props.get(f"{name}Us")
    if micros is not None:
        return _frommicros(micros)
    return utc_datetime(props.get(name))


def memory_from_props(ns: str, props: dict[str, Any]) -> Memory:
    recorded = _time(props, "recorded")
    if recorded is None:
        raise GraphsvcError(f"memory {props.get('id')} has no recordedAt")
    # Every field, of its type: construct() makes the Memory without pydantic's model_construct
    # (a window reads about 50 memories a bundle).
    return construct(
        Memory,
        {
            "id": UUID(props["id"]),
            "namespace": ns,
            "text": props["text"],
            "kind": props["kind"],
            "occurred_at": _time(props, "occurred"),
            "recorded_at": recorded,
            "invalidated_at": utc_datetime(props.get("invalidatedAt")),
            "tags": tuple(props.get("tags") or ()),
            "source": props.get("source"),
            "confidence": float(props.get("confidence", 1.0)),
            "tokens": int(props["tokens"]),
            "terms": _terms(props.get("termSeq"), props.get("terms")),
            "valid_from": _valid(props, "validFrom"),
            "valid_until": _valid(props, "validUntil"),
        },
    )


def stored_terms(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Analysed terms as a query returned ``coalesce(m.termSeq, m.terms)``."""
    if isinstance(value, str):
        return tuple(value.split())
    return tuple(value or ())


def term_deltas(
    added: Sequence[Sequence[str]], removed: Sequence[Sequence[str]]
) -> tuple[list[str], list[int]]:
    """The terms whose document frequency changes (sorted) and by how much: ``bump_term_stats``'s
    ``terms`` and ``deltas`` after memories with these analysed terms were added and removed."""
    counts: Counter[str] = Counter()
    for terms in added:
        counts.update(set(terms))
    for terms in removed:
        counts.subtract(set(terms))
    changed = sorted(term for term, delta in counts.items() if delta != 0)
    return changed, [counts[term] for term in changed]


def _terms(sequence: str | None, listed: Sequence[str] | None) -> tuple[str, ...]:
    """A memory's analysed terms: from ``termSeq`` (space-separated; analysed terms never hold a
    space), else from the list older memories have."""
    if sequence is not None:
        return tuple(sequence.split())
    return tuple(listed or ())


def _frommicros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


def successor_from_row(row: Mapping[str, Any]) -> Successor:
    """A row of successors.cypher."""
    return Successor(UUID(row["older"]), UUID(row["newer"]), _frommicros(row["startUs"]))


def candidates_from_rows(
    rows: Sequence[Sequence[Any]], score_terms: Sequence[str]
) -> list[Candidate]:
    """Candidates from ``[id, terms, length, recordedUs, occurredUs, confidence]`` rows of
    candidates.cypher (``terms``: termSeq, or the list of an older memory), with the frequency of
    each of ``score_terms`` (counted here: the query's handful of terms against each memory's)."""
    few = len(score_terms) <= FEW_TERMS
    position = {term: i for i, term in enumerate(score_terms)}
    found = []
    for memory_id, terms, length, recorded, occurred, confidence in rows:
        words = terms.split() if isinstance(terms, str) else list(terms or ())
        if few:
            tf = tuple(map(words.count, score_terms))
        else:
            counts = [0] * len(score_terms)
            for word in words:
                i = position.get(word)
                if i is not None:
                    counts[i] += 1
            tf = tuple(counts)
        occurred_us = None if occurred is None else int(occurred)
        candidate = Candidate(
            id=UUID(memory_id),
            tf=tf,
            length=int(length),
            recorded_us=int(recorded),
            occurred_us=occurred_us,
            confidence=float(confidence),
        )
        found.append(candidate)
    return found


class _Ids(Sequence[UUID]):
    """Candidate ids as the query returned them (strings), made UUIDs only when read: scoring
    reads the ids of the few candidates whose order it settles, not of every candidate."""

    __slots__ = ("_parsed", "_raw")

    def __init__(self, raw: list[str]) -> None:
        self._raw = raw
        self._parsed: dict[int, UUID] = {}

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> UUID: ...

    @overload
    def __getitem__(self, index: slice) -> list[UUID]: ...

    def __getitem__(self, index: int | slice) -> UUID | list[UUID]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._raw)))]
        found = self._parsed.get(index)
        if found is None:
            found = self._parsed[index] = UUID(self._raw[index])
        return found


def columns_from_row(
    row: Any, asked: Sequence[str], score_terms: Sequence[str]
) -> CandidateColumns:
    """The candidate columns of a recall_columns.cypher row, whose frequencies are those of
    ``asked``, with one frequency column per entry of ``score_terms`` (each one of ``asked``).

    Raises:
        StoreCorruptError: the columns differ in length (a candidate lacks a property every
            memory has).
    """
    n = len(row["ids"])
    if any(len(row[name]) != n for name in COLUMNS):
        sizes = ", ".join(f"{name} {len(row[name])}" for name in COLUMNS)
        raise StoreCorruptError(
            f"a candidate memory lacks length, recordedUs or confidence ({sizes}): export the "
            "namespace and import it again to rewrite its memories"
        )
    position = {term: i for i, term in enumerate(asked)}
    counts = np.array(row["tf"], dtype=np.int64).reshape(n, len(asked))
    tf = counts[:, [position[term] for term in score_terms]]
    recorded = np.array(row["recorded"], dtype=np.int64)
    occurred = np.array(row["occurred"], dtype=np.int64)
    missing = occurred == NO_OCCURRED
    return CandidateColumns(
        ids=_Ids(row["ids"]),
        tf=tf,
        length=np.array(row["lengths"], dtype=np.int64),
        recorded_us=recorded,
        occurred_us=np.where(missing, 0, occurred),
        occurred=~missing,
        when_us=np.where(missing, recorded, occurred),
        confidence=np.array(row["confidence"], dtype=np.float64),
    )


def link_from_row(row: Any) -> Link:
    micros = row["createdUs"]
    created = _frommicros(micros) if micros is not None else utc_datetime(row["createdAt"])
    if created is None:
        raise GraphsvcError(f"link {row['source']} -> {row['target']} has no createdAt")
    return construct(
        Link,
        {
            "source": UUID(row["source"]),
            "target": UUID(row["target"]),
            "kind": LinkKind(row["kind"]),
            "weight": float(row["weight"]),
            "created_at": created,
            "note": row["note"],
        },
    )


def event_from_props(props: dict[str, Any]) -> ContextEvent:
    recorded = utc_datetime(props.get("recordedAt"))
    return ContextEvent.model_construct(
        run_id=props["runId"],
        seq=int(props["seq"]),
        step=int(props["step"]),
        kind=ContextEventKind(props["kind"]),
        detail=props.get("detail"),
        est_tokens=props.get("estTokens"),
        reported_tokens=props.get("reportedTokens"),
        recorded_at=recorded,
    )


def lucene_query(namespace: str, terms: Sequence[str]) -> str:
    """A full-text query for memories of ``namespace`` containing any of ``terms``. Namespaces are
    ``[A-Za-z0-9_-]`` and analysed terms are letters and digits only, so nothing needs escaping."""
    return f'+namespace:"{namespace}" +termText:({" ".join(terms)})'


def as_of_param(as_of: AsOf | None) -> dict[str, Any] | None:
    """The ``$asOf`` of the queries that read as of an instant (null: now)."""
    return None if as_of is None else {"us": as_of.at_us, "known": as_of.known}
