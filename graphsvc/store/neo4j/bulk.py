"""Files for Neo4j's offline bulk importer: the first load of a large export.

:func:`write_import_files` writes, for one namespace, the CSV files that Neo4j's batch importer
(what ``neo4j-admin database import full`` runs; here ``scripts/neo4j.sh import DIR``) turns into
exactly the nodes and relationships the Neo4j store writes for the same memories and links:

- ``memories.csv`` (``:Memory``): every property :func:`~graphsvc.store.neo4j.rows.memory_props`
  gives (the index helpers ``termText``, ``termSeq``, ``length``, ``recordedUs``, ``occurredUs``
  included), plus what ``create_memories.cypher`` adds (``namespace``, the DateTime copies
  ``recordedAt`` and ``occurredAt``, and ``vectorQueuedUs``: it waits for its vector);
- ``links.csv``: each link as ``merge_links.cypher`` stores it (``weight``, ``note``,
  ``createdUs``, ``createdAt``);
- ``term_stats.csv`` (``:TermStat``: ``key``, ``namespace``, ``term``, ``df``) and
  ``namespace_stat.csv`` (``:NamespaceStat``: ``memories``, ``totalLength``, ``vectors``, and
  ``vectorQueue``: every memory is in the vector queue, ``vectorQueuedUs``), as the
  store's statistics writes leave them (the document frequencies come from
  :func:`~graphsvc.store.neo4j.rows.term_deltas`); the namespace's link, belief and
  term counts are left out, and the store's first open counts them once (``backfill_counts``);
- ``import.args``: the importer's options for these files (one a line; the launcher's import mode
  reads it), and ``after_import.cypher``: what the importer cannot write, run on the store before
  the server starts (a memory without tags has ``tags = []``, and the importer stores no empty
  list).

No constraint or index is written: the store makes them when it opens, as always, and waits until
they are online (the full-text index is then populated from the imported nodes).

The importer REPLACES the whole database (Neo4j Community has one user database): this is for the
first load of a fresh server only. Vectors are not written: every memory is imported waiting
in the vector queue, and with dense recall on ``graphsvc embed`` encodes them once the server is
up (it declares the namespace's model; from then on a server drains what is written).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from graphsvc.errors import BadInputError, GraphsvcError
from graphsvc.model import Link, Memory
from graphsvc.store.candidates import micros
from graphsvc.store.cypher import query
from graphsvc.store.neo4j.rows import memory_props, namespaced_key, term_deltas

#: The importer's type of each ``:Memory`` property: those of ``memory_props`` (``id`` is the
#: node's import id, kept as the property ``id``), then those ``create_memories.cypher`` sets.
MEMORY_TYPES: dict[str, str] = {
    "id": "ID(Memory)",
    "text": "string",
    "kind": "string",
    "invalidatedAt": "datetime",
    "tags": "string[]",
    "source": "string",
    "confidence": "double",
    "tokens": "long",
    "termSeq": "string",
    "length": "long",
    "termText": "string",
    "recordedUs": "long",
    "occurredUs": "long",
    "validFromUs": "long",
    "validUntilUs": "long",
    "namespace": "string",
    "recordedAt": "datetime",
    "occurredAt": "datetime",
    "validFrom": "datetime",
    "validUntil": "datetime",
    "vectorQueuedUs": "long",
}
LINK_HEADER = (
    ":START_ID(Memory)",
    ":END_ID(Memory)",
    ":TYPE",
    "weight:double",
    "note:string",
    "createdUs:long",
    "createdAt:datetime",
)
TERM_STAT_HEADER = ("key:string", "namespace:string", "term:string", "df:long")
NAMESPACE_STAT_HEADER = (
    "namespace:string",
    "memories:long",
    "totalLength:long",
    "vectors:long",
    "vectorQueue:boolean",
)
#: Array delimiters tried in turn (the first that no tag holds): control characters.
ARRAY_DELIMITERS = ("\x1f", "\x1e", "\x1d", "\x1c", "\x07", "\x01")


@dataclass(frozen=True)
class BulkFiles:
    """What :func:`write_import_files` wrote."""

    directory: Path
    memories: int
    links: int
    terms: int
    multiline: tuple[str, ...]


def _iso(moment: datetime) -> str:
    """A time as the importer reads a UTC DateTime, to the microsecond (as
    ``datetime.fromepoch`` makes it from the epoch microseconds)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _double(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _quoted(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


def _formatter(csv_type: str, delimiter: str) -> Callable[[Any], str]:
    """How a value of a column of this importer type is written: strings quoted (a quote
    doubled), lists joined with the array delimiter, times as UTC DateTimes; a null is an empty
    unquoted field (the property is not set)."""
    if csv_type == "long":
        return str
    if csv_type == "boolean":
        return lambda value: "true" if value else "false"
    if csv_type == "double":
        return _double
    if csv_type == "datetime":
        return _iso
    if csv_type == "string[]":
        return lambda values: _quoted(delimiter.join(values))
    if csv_type == "string" or csv_type.startswith(("ID(", ":")):
        return _quoted
    raise GraphsvcError(f"no CSV form for the importer type {csv_type!r}")


class _Rows:
    """Writes rows of one CSV file and notes whether a value spans lines."""

    def __init__(self, out: IO[str], header: Sequence[str], delimiter: str) -> None:
        self._out = out
        types = [h.rpartition(":")[2] if not h.startswith(":") else "string" for h in header]
        self._formats = [_formatter(t, delimiter) for t in types]
        self.multiline = False
        out.write(",".join(header) + "\n")

    def write(self, values: Sequence[Any]) -> None:
        line = ",".join(
            "" if v is None else f(v) for f, v in zip(self._formats, values, strict=True)
        )
        if not self.multiline and ("\n" in line or "\r" in line):
            self.multiline = True
        self._out.write(line + "\n")


def memory_row(namespace: str, memory: Memory) -> dict[str, Any]:
    """The properties of a ``:Memory`` node as the store writes it: ``memory_props`` and the
    ones ``create_memories.cypher`` sets from them.

    Raises:
        GraphsvcError: ``memory_props`` gives a property this module has no CSV type for (add it
            to :data:`MEMORY_TYPES`).
    """
    props = memory_props(memory)
    unknown = sorted(props.keys() - MEMORY_TYPES.keys())
    if unknown:
        raise GraphsvcError(
            f"the Neo4j store writes Memory properties the bulk writer has no CSV type for: "
            f"{', '.join(unknown)} (add them to graphsvc.store.neo4j.bulk.MEMORY_TYPES)"
        )
    props["namespace"] = namespace
    props["recordedAt"] = memory.recorded_at
    props["occurredAt"] = memory.occurred_at
    props["validFrom"] = memory.valid_from
    props["validUntil"] = memory.valid_until
    props["vectorQueuedUs"] = props["recordedUs"]  # imported without a vector: it waits
    return props


def link_row(link: Link) -> dict[str, Any]:
    """A link as ``merge_links.cypher`` receives it from :meth:`Neo4jStore.add_links`, plus the
    DateTime ``createdAt`` that query makes from ``createdUs``."""
    return {
        "source": str(link.source),
        "target": str(link.target),
        "kind": link.kind.value,
        "weight": link.weight,
        "note": link.note,
        "createdUs": micros(link.created_at),
        "createdAt": link.created_at,
    }


def _delimiter(memories: Sequence[Memory]) -> str:
    used = {ch for m in memories for tag in m.tags for ch in tag if ch in ARRAY_DELIMITERS}
    for candidate in ARRAY_DELIMITERS:
        if candidate not in used:
            return candidate
    raise BadInputError(
        "every array delimiter the bulk writer can use appears in some tag: import with "
        "`graphsvc import` instead"
    )


def _fresh_directory(directory: Path) -> None:
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise BadInputError(
            f"{directory} exists and is not an empty directory: name a new directory for the "
            "import files"
        )


def write_import_files(
    namespace: str, items: Iterable[Memory | Link], directory: Path
) -> BulkFiles:
    """Write the importer's files for ``namespace`` from a store's export (memories, then
    links: what :meth:`~graphsvc.store.base.Store.export` yields) to ``directory``, which must
    be new or empty. The files appear whole or not at all (written beside it, then renamed).

    Raises:
        BadInputError: ``directory`` is not new or empty, a link names a memory that is not among
            the memories, or every usable array delimiter appears in a tag.
    """
    _fresh_directory(directory)
    memories: list[Memory] = []
    links: list[Link] = []
    for item in items:
        if isinstance(item, Memory):
            memories.append(item)
        else:
            links.append(item)
    known = {m.id for m in memories}
    for link in links:
        for end in (link.source, link.target):
            if end not in known:
                raise BadInputError(
                    f"link {link.source} -> {link.target} names memory {end}, which is not "
                    f"among the memories of namespace {namespace!r}"
                )
    delimiter = _delimiter(memories)
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        work.chmod(0o755)  # mkdtemp's is private; the files are the caller's to share
        multiline, terms = _write(work, namespace, memories, links, delimiter)
        args = [
            "--nodes=Memory=memories.csv",
            "--nodes=TermStat=term_stats.csv",
            "--nodes=NamespaceStat=namespace_stat.csv",
            f"--array-delimiter=U+{ord(delimiter):04X}",
        ]
        if links:
            args.append("--relationships=links.csv")
        if multiline:
            args.append("--multiline-fields-format=v2")
            args.append(f"--multiline-fields={','.join(multiline)}")
        args.append("--after=after_import.cypher")
        (work / "import.args").write_text("\n".join(args) + "\n", encoding="utf-8")
        (work / "after_import.cypher").write_text(query("after_import"), encoding="utf-8")
        if directory.exists():
            directory.rmdir()  # empty, checked above
        os.replace(work, directory)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return BulkFiles(directory, len(memories), len(links), terms, multiline)


def _write(
    work: Path, namespace: str, memories: list[Memory], links: list[Link], delimiter: str
) -> tuple[tuple[str, ...], int]:
    """Write the CSV files into ``work``; the names of those with a value spanning lines, and
    how many terms have a ``:TermStat``."""
    multiline: list[str] = []
    columns = list(MEMORY_TYPES)
    header = [f"{name}:{MEMORY_TYPES[name]}" for name in columns]

    def opened(name: str) -> IO[str]:
        return (work / name).open("w", encoding="utf-8", newline="")

    with opened("memories.csv") as out:
        rows = _Rows(out, header, delimiter)
        for memory in memories:
            row = memory_row(namespace, memory)
            rows.write([row.get(name) for name in columns])
    if rows.multiline:
        multiline.append("memories.csv")
    if links:
        with opened("links.csv") as out:
            rows = _Rows(out, LINK_HEADER, delimiter)
            for link in links:
                r = link_row(link)
                rows.write(
                    [
                        r["source"],
                        r["target"],
                        r["kind"],
                        r["weight"],
                        r["note"],
                        r["createdUs"],
                        r["createdAt"],
                    ]
                )
        if rows.multiline:
            multiline.append("links.csv")
    terms, dfs = term_deltas([m.terms for m in memories], [])
    with opened("term_stats.csv") as out:
        rows = _Rows(out, TERM_STAT_HEADER, delimiter)
        for term, df in zip(terms, dfs, strict=True):
            rows.write([namespaced_key(namespace, term), namespace, term, df])
    with opened("namespace_stat.csv") as out:
        rows = _Rows(out, NAMESPACE_STAT_HEADER, delimiter)
        if memories:
            length = sum(len(m.terms) for m in memories)
            rows.write([namespace, len(memories), length, 0, True])
    return tuple(multiline), len(terms)


__all__ = [
    "MEMORY_TYPES",
    "BulkFiles",
    "link_row",
    "memory_row",
    "write_import_files",
]
