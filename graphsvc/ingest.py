"""JSON Lines in and out: what ``graphsvc ingest``, ``import`` and ``export`` speak.

One object per line::

    {"type": "memory", "id": UUID?, "text": "...", "kind": "...", "occurredAt": ISO-8601?,
     "tags": [...]?, "source": "..."?, "confidence": 0..1?, "validFrom": ISO-8601?,
     "validUntil": ISO-8601?, "recordedAt": ISO-8601?}
    {"type": "link", "source": UUID, "target": UUID,
     "kind": "CAUSES|PRECEDES|RELATES_TO|SUPERSEDES", "weight": number?, "note": "..."?,
     "createdAt": ISO-8601?}

``recordedAt`` (a memory's) and ``createdAt`` (a link's) are what an export recorded: an import
restores them (the write's own time when absent), so that a backup and restore keeps the KNOWN
view of the past (what memory held at each instant). They may not be later than the import.

Ingest is validated as a whole before anything is written: a malformed line, a bad field, a
duplicate id with other content, or a link to a memory that is neither in the file nor in the
store stops it with an error naming the line, and nothing is written. Writing then goes in
batches; every write is idempotent (memories without an id get one derived from their content), so
an ingest interrupted part-way is resumed by running the same command again.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

from pydantic import TypeAdapter, ValidationError
from tqdm import tqdm

from graphsvc.errors import BadInputError, GraphsvcError, validation_message
from graphsvc.model import Link, LinkInput, Memory, MemoryInput, UtcDateTime
from graphsvc.service import MemoryService, check_interval, content_id

T = TypeVar("T")


@dataclass
class IngestPlan:
    """A validated file: memories and links with the line each came from, and the times an
    export recorded (by line): a memory's ``recordedAt``, a link's ``createdAt``."""

    memories: list[tuple[int, MemoryInput]] = field(default_factory=list)
    links: list[tuple[int, LinkInput]] = field(default_factory=list)
    recorded_at: dict[int, datetime] = field(default_factory=dict)
    created_at: dict[int, datetime] = field(default_factory=dict)


_TIME = TypeAdapter(UtcDateTime)


@dataclass(frozen=True)
class IngestReport:
    """What an ingest wrote, and the seconds its memory writes took until acknowledged."""

    memories_created: int
    memories_unchanged: int
    links: int
    evicted: int
    memory_seconds: float = 0.0


def _fail(name: str, number: int, message: str) -> BadInputError:
    return BadInputError(f"{name}:{number}: {message}")


def _decode(raw: bytes, name: str, number: int) -> str:
    """A line of a file as text (UTF-8).

    Raises:
        BadInputError: the line is not UTF-8 (the message names the first bad byte, or says the
            file is UTF-16).
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if number == 1 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            what = "the file is UTF-16 (it starts with a UTF-16 byte order mark)"
        else:
            what = f"byte 0x{raw[exc.start]:02x} at column {exc.start + 1} is not UTF-8"
        raise _fail(
            name, number, f"not UTF-8 text: {what}; convert the file to UTF-8 (iconv -t UTF-8)"
        ) from None


def parse_jsonl(lines: Iterable[str | bytes], name: str = "<input>") -> IngestPlan:
    """Parse and validate JSON Lines; blank lines are skipped. Lines given as bytes (a file
    opened in binary) are decoded one by one, so that a byte that is not UTF-8 is reported with
    its line.

    Raises:
        BadInputError: the first bad line, named ``name:line``: not UTF-8, not JSON (nested too
            deeply or a number too long included), or not a valid memory or link.
    """
    plan = IngestPlan()
    for number, line in enumerate(lines, start=1):
        raw = _decode(line, name, number) if isinstance(line, bytes) else line
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _fail(name, number, f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
        except RecursionError:
            raise _fail(
                name, number, "not valid JSON: arrays or objects nested too deeply"
            ) from None
        except ValueError as exc:  # an integer with more digits than Python converts
            reason = str(exc).partition(";")[0]
            raise _fail(name, number, f"not valid JSON: a number too long ({reason})") from None
        if not isinstance(obj, dict):
            raise _fail(name, number, "expected a JSON object with a 'type' field")
        body: dict[str, Any] = dict(obj)
        kind = body.pop("type", None)
        field_name = {"memory": "recordedAt", "link": "createdAt"}.get(str(kind))
        restored = body.pop(field_name, None) if field_name else None
        try:
            if kind == "memory":
                plan.memories.append((number, MemoryInput.model_validate(body)))
            elif kind == "link":
                plan.links.append((number, LinkInput.model_validate(body)))
            else:
                raise _fail(name, number, f"'type' must be 'memory' or 'link', got {kind!r}")
        except ValidationError as exc:
            raise _fail(name, number, validation_message(exc)) from exc
        if restored is not None:
            try:
                at = _TIME.validate_python(restored)
            except ValidationError as exc:
                raise _fail(name, number, validation_message(exc, field_name)) from exc
            (plan.recorded_at if kind == "memory" else plan.created_at)[number] = at
    return plan


def _batches(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def ingest(
    service: MemoryService,
    namespace: str,
    plan: IngestPlan,
    *,
    name: str = "<input>",
    progress: bool | None = None,
    on_batch: Callable[[int], None] | None = None,
    writers: int = 1,
) -> IngestReport:
    """Check the plan against the store, then write it in batches (memories, then links).

    Args:
        progress: show a progress bar on stderr; ``None`` shows one when stderr is a terminal.
        on_batch: called with the number of items after each batch is acknowledged.
        writers: memory batches in flight at once (:meth:`MemoryService.write_batches`; the
            embedded store writes one at a time). One when the file could reach the
            namespace's memory cap: every batch then evicts under the namespace's count lock,
            and two at once on Neo4j can deadlock there and be retried.

    Raises:
        BadInputError: a memory or link the store refuses, named ``name:line`` (nothing written).
    """
    service.check_namespace(namespace)
    first_line = _check_memories(service, namespace, plan, name)
    _check_links(service, namespace, plan, name, first_line)

    show = sys.stderr.isatty() if progress is None else progress
    total = len(first_line) + len(plan.links)
    unique = [item.model_copy(update={"id": mid}) for mid, (_, item) in first_line.items()]
    cap = service.settings.max_memories_per_namespace
    if writers > 1 and service.stats(namespace).memories + len(unique) > cap:
        writers = 1
    times = [plan.recorded_at.get(number) for number, _ in first_line.values()]
    with tqdm(total=total, unit="item", disable=not show, file=sys.stderr) as bar:

        def acknowledged(items: int) -> None:
            bar.update(items)
            if on_batch is not None:
                on_batch(items)

        began = time.perf_counter()
        created, unchanged, evicted = _write_memories(
            service,
            namespace,
            unique,
            times if plan.recorded_at else None,
            writers=writers,
            acknowledged=acknowledged,
        )
        seconds = time.perf_counter() - began
        links = _write_links(service, namespace, plan, acknowledged=acknowledged)
    return IngestReport(created, unchanged, links, evicted, seconds)


def _check_memories(
    service: MemoryService, namespace: str, plan: IngestPlan, name: str
) -> dict[UUID, tuple[int, MemoryInput]]:
    """Every memory of the plan as the store would take it (its input, and its interval with
    the ``recordedAt`` an export restores), by id: the line it first appears on and its input,
    in file order. A repeated line is kept once.

    Raises:
        BadInputError: a memory refused, or an id on two lines with other content.
    """
    first_line: dict[UUID, tuple[int, MemoryInput]] = {}
    for number, item in plan.memories:
        try:
            service.check_input(item)
            recorded = plan.recorded_at.get(number)
            if item.occurred_at is not None or recorded is not None:  # a start known now
                check_interval(item, recorded or datetime.max.replace(tzinfo=UTC))
        except GraphsvcError as exc:
            raise _fail(name, number, str(exc)) from exc
        mid = item.id or content_id(namespace, item)
        seen = first_line.get(mid)
        if seen is not None:
            if seen[1].model_dump() != item.model_copy(update={"id": seen[1].id}).model_dump():
                raise _fail(name, number, f"id {mid} is also on line {seen[0]} with other content")
            continue
        first_line[mid] = (number, item)
    return first_line


def _check_links(
    service: MemoryService,
    namespace: str,
    plan: IngestPlan,
    name: str,
    first_line: Mapping[UUID, object],
) -> None:
    """Every link joins two memories, each in the file or already in the namespace (one read
    for all those outside the file), and not a memory to itself.

    Raises:
        BadInputError: the first link that does not.
    """
    endpoints = {end for _, lk in plan.links for end in (lk.source, lk.target)}
    outside = sorted(endpoints - first_line.keys(), key=str)
    present = {m.id for m in service.get_memories(namespace, outside)} if outside else set()
    for number, lk in plan.links:
        for end in (lk.source, lk.target):
            if end not in first_line and end not in present:
                raise _fail(
                    name,
                    number,
                    f"link names memory {end}, which is neither in the file nor "
                    f"in namespace {namespace!r}",
                )
        if lk.source == lk.target:
            raise _fail(name, number, f"cannot link memory {lk.source} to itself")


def _write_memories(
    service: MemoryService,
    namespace: str,
    unique: list[MemoryInput],
    times: list[datetime | None] | None,
    *,
    writers: int,
    acknowledged: Callable[[int], None],
) -> tuple[int, int, int]:
    """Write the memories in batches of ``GRAPHSVC_MAX_BATCH`` (``times``: the ``recordedAt``
    each restores); returns how many were created, unchanged and evicted."""
    created = unchanged = evicted = 0
    size = service.settings.max_batch
    batches = list(_batches(unique, size))
    batch_times = list(_batches(times, size)) if times is not None else None
    written = service.write_batches(namespace, batches, writers=writers, recorded=batch_times)
    for batch, (_, result) in zip(batches, written, strict=True):
        created += len(result.created)
        unchanged += len(result.unchanged)
        evicted += len(result.evicted)
        acknowledged(len(batch))
    return created, unchanged, evicted


def _write_links(
    service: MemoryService,
    namespace: str,
    plan: IngestPlan,
    *,
    acknowledged: Callable[[int], None],
) -> int:
    """Write the links in batches of ``GRAPHSVC_MAX_BATCH``, with the ``createdAt`` an export
    recorded; returns how many."""
    size = service.settings.max_batch
    links = [lk for _, lk in plan.links]
    link_times = [plan.created_at.get(number) for number, _ in plan.links]
    for start in range(0, len(links), size):
        link_batch = links[start : start + size]
        restored = link_times[start : start + size] if plan.created_at else None
        service.add_links(namespace, link_batch, restored)
        acknowledged(len(link_batch))
    return len(links)


def memory_row(memory: Memory) -> dict[str, Any]:
    """A memory in the ingest format, with the ``recordedAt`` an import restores
    (``validFrom``/``validUntil`` only when set)."""
    row: dict[str, Any] = {
        "type": "memory",
        "id": str(memory.id),
        "text": memory.text,
        "kind": memory.kind,
        "occurredAt": memory.occurred_at.isoformat() if memory.occurred_at else None,
        "tags": list(memory.tags),
        "source": memory.source,
        "confidence": memory.confidence,
        "recordedAt": memory.recorded_at.isoformat(),
    }
    if memory.valid_from is not None:
        row["validFrom"] = memory.valid_from.isoformat()
    if memory.valid_until is not None:
        row["validUntil"] = memory.valid_until.isoformat()
    return row


def link_row(link: Link) -> dict[str, Any]:
    """A link in the ingest format, with the ``createdAt`` an import restores."""
    row: dict[str, Any] = {
        "type": "link",
        "source": str(link.source),
        "target": str(link.target),
        "kind": link.kind.value,
        "weight": link.weight,
        "createdAt": link.created_at.isoformat(),
    }
    if link.note is not None:
        row["note"] = link.note
    return row


def export_lines(service: MemoryService, namespace: str) -> Iterator[str]:
    """The namespace as JSON Lines (memories oldest first, then links), ready for ingest."""
    service.check_namespace(namespace)
    for item in service.export(namespace):
        row = memory_row(item) if isinstance(item, Memory) else link_row(item)
        yield json.dumps(row, ensure_ascii=False) + "\n"


__all__ = ["IngestPlan", "IngestReport", "export_lines", "ingest", "parse_jsonl"]
