"""``GraphsvcStore``: LangGraph's long-term memory store (``BaseStore``) over a graphsvc server.

**Namespaces are tags.** graphsvc's namespace is a tenancy boundary that the API key decides (a
caller can never choose another), while a LangGraph app makes namespaces at run time
(``("memories", user_id)``). So the store works in its key's graphsvc namespace and writes the
LangGraph namespace of an item as tags, one per prefix: ``("users", "ada", "memories")`` is tagged
``lg:users``, ``lg:users.ada`` and ``lg:users.ada.memories`` (LangGraph forbids periods in labels,
so the path is unambiguous). graphsvc lists a tag's memories by an index, so listing a prefix
reads only its items. Give tenants that must never see each other separate keys.

**An item is one memory** of kind ``langgraph.item``, with an id derived from its namespace and
key. Its value becomes the memory's text: a value of exactly one non-blank string field
(``{"memory": "Ada prefers tea"}``, the common case) is that string, so recall and bundles read
plain language; any other value is its JSON. The namespace, the key, which field the text was and
``index=False`` are kept as JSON in the memory's source. ``get`` gives the value back as it was
put for JSON values; what cannot round-trip (tuples, non-string keys, dates, NaN) is refused at
``put``. A value over graphsvc's text limit (``GRAPHSVC_MAX_TEXT_CHARS``) is refused by graphsvc.

**Search** with ``query`` is graphsvc's recall over the key's namespace, best first, with its
score; the namespace prefix and ``filter`` (on the value's fields) are applied to that ranking,
which holds at most ``GRAPHSVC_RANKED_LIMIT`` (50) memories, so a prefix that owns few of a large
namespace's best matches can get fewer than ``limit``. ``index=False`` items are left out of
searches with a query (they are still written, and listed without one). Without ``query``, items
under the prefix come newest first. ``created_at`` and ``updated_at`` are both the time of the
latest ``put`` (a changed value is a new memory: graphsvc forgets the old one, with its links).
TTLs are not supported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)
from pydantic import ValidationError

from graphsvc.client import DEFAULT_URL, AsyncGraphsvcClient, GraphsvcClient
from graphsvc.errors import BadInputError, validation_message
from graphsvc.model import MemoryInput
from graphsvc_langchain import _io
from graphsvc_langchain._codec import bounded_source, checked_tag, item_id, read_source, to_json
from graphsvc_langchain._connection import DEFAULT_TIMEOUT, Connection
from graphsvc_langchain._filters import matches

KIND = "langgraph.item"
SOURCE_PREFIX = "langgraph:"
TAG_PREFIX = "lg:"

Namespace = tuple[str, ...]


def namespace_tag(namespace: Namespace) -> str:
    """The tag of every item at or under ``namespace``."""
    return TAG_PREFIX + ".".join(namespace)


class GraphsvcStore(BaseStore):
    """LangGraph's ``BaseStore`` whose items are graphsvc memories.

    Constructing it does no I/O; each operation opens and closes its own connection unless
    ``client`` / ``async_client`` are given.

    Args:
        url: graphsvc's GraphQL endpoint.
        api_key: the key (it decides the graphsvc namespace the items live in).
        min_score: passed to graphsvc's bundle for searches with a query: 0 (the default) ranks
            everything recall reaches; None lets graphsvc abstain (no items) when its best score
            is below the stage's threshold.
        stage: graphsvc's scoring stage for searches (``default``, ``recent``, ``exact``).
        wait_for_vectors: each put answers once its items' vectors are stored, so a search
            right after it finds them by meaning (True, the default); False writes at lexical
            speed and the vectors follow from graphsvc's vector queue.
        timeout: seconds per request.
        client / async_client: graphsvc clients to use instead of new ones.
    """

    supports_ttl = False

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        min_score: float | None = 0.0,
        stage: str | None = None,
        wait_for_vectors: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        client: GraphsvcClient | None = None,
        async_client: AsyncGraphsvcClient | None = None,
    ) -> None:
        self.min_score = min_score
        self.stage = stage
        self.wait_for_vectors = wait_for_vectors
        self._connection = Connection(
            url, api_key=api_key, timeout=timeout, client=client, async_client=async_client
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order (consecutive puts are one write; the last put of a key wins)."""
        return self._connection.run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._connection.arun(self._batch(list(ops)))

    # -- the plans --------------------------------------------------------------------------------

    def _batch(self, ops: list[Op]) -> _io.Plan[list[Result]]:
        for op in ops:
            validate_op_namespace(op)
        results: list[Result] = []
        n = 0
        while n < len(ops):
            op = ops[n]
            if isinstance(op, PutOp):
                end = n
                while end < len(ops) and isinstance(ops[end], PutOp):
                    end += 1
                puts = [p for p in ops[n:end] if isinstance(p, PutOp)]
                yield from self._put(puts)
                results.extend([None] * len(puts))
                n = end
                continue
            if isinstance(op, GetOp):
                results.append((yield from self._get(op)))
            elif isinstance(op, SearchOp):
                results.append((yield from self._search(op)))
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._list_namespaces(op)))
            else:
                raise BadInputError(f"unknown store operation {type(op).__name__}")
            n += 1
        return results

    def _get(self, op: GetOp) -> _io.Plan[Item | None]:
        memory_id = item_id(op.namespace, op.key)
        found = yield from _io.read([memory_id])
        memory = found.get(memory_id)
        item = None if memory is None else _item(memory)
        if item is None or item.namespace != op.namespace or item.key != op.key:
            return None
        return item

    def _put(self, ops: list[PutOp]) -> _io.Plan[None]:
        last: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            last.pop((op.namespace, op.key), None)
            last[(op.namespace, op.key)] = op
        writes = [_memory(op) for op in last.values() if op.value is not None]
        ids = [item_id(ns, key) for ns, key in last]
        existing = yield from _io.read(ids)
        new = {w.id: w for w in writes}
        stale = []
        for memory_id, memory in existing.items():
            if memory.kind != KIND:
                continue
            write = new.get(memory_id)
            if write is None or (memory.text, memory.source, memory.tags) != (
                write.text,
                write.source,
                write.tags,
            ):
                stale.append(memory_id)
        yield from _io.forget(stale)
        yield from _io.remember(writes, self.wait_for_vectors)

    def _search(self, op: SearchOp) -> _io.Plan[list[SearchItem]]:
        found: list[SearchItem] = []
        if op.limit <= 0:
            return found
        skip = op.offset
        prefix = op.namespace_prefix

        def take(item: Item, score: float | None) -> bool:
            """Keep ``item`` if it passes; True once the page is full."""
            nonlocal skip
            if item.namespace[: len(prefix)] != prefix:
                return False
            if op.filter and not matches(item.value, op.filter):
                return False
            if skip > 0:
                skip -= 1
                return False
            found.append(_search_item(item, score))
            return len(found) >= op.limit

        if op.query is not None:
            ranking = yield from _io.ranked(op.query, min_score=self.min_score, stage=self.stage)
            for part in _io.chunks(ranking, _io.ALIASES):
                memories = yield from _io.read([memory_id for memory_id, _ in part])
                for memory_id, score in part:
                    memory = memories.get(memory_id)
                    item = None if memory is None else _item(memory)
                    if item is not None and _indexed(memory) and take(item, score):
                        return found
            return found
        if len(namespace_tag(prefix)) > 64:
            return found  # no item can be under a prefix too long to be a tag
        tag = namespace_tag(prefix) if prefix else None
        after: str | None = None
        while True:
            rows, after = yield from _io.page(KIND, tag, after)
            for memory in rows:
                item = _item(memory)
                if item is not None and take(item, None):
                    return found
            if after is None:
                return found

    def _list_namespaces(self, op: ListNamespacesOp) -> _io.Plan[list[Namespace]]:
        namespaces: set[Namespace] = set()
        after: str | None = None
        while True:
            rows, after = yield from _io.page(KIND, None, after)
            for memory in rows:
                item = _item(memory)
                if item is None:
                    continue
                namespace = item.namespace
                if not all(_meets(namespace, c) for c in op.match_conditions or ()):
                    continue
                if op.max_depth is not None:
                    namespace = namespace[: op.max_depth]
                namespaces.add(namespace)
            if after is None:
                break
        listed = sorted(namespaces)
        return listed[op.offset : op.offset + op.limit]


def _memory(op: PutOp) -> MemoryInput:
    """The memory an item is kept as."""
    namespace, key, value = op.namespace, op.key, op.value
    assert value is not None
    where = f"the item {key!r} of {namespace}"
    if len(namespace) > 32:
        raise BadInputError(f"{where}: graphsvc keeps at most 32 namespace levels (tags)")
    fields = list(value)
    only = value[fields[0]] if len(fields) == 1 else None
    if isinstance(only, str) and only.strip() and isinstance(fields[0], str):
        text, field = only, fields[0]
    else:
        text, field = to_json(dict(value), f"the value of {where}"), None
    payload: dict[str, Any] = {"ns": list(namespace), "key": key, "field": field}
    if op.index is False:
        payload["index"] = False
    tags = tuple(
        checked_tag(namespace_tag(namespace[:depth]), f"the namespace {namespace}")
        for depth in range(1, len(namespace) + 1)
    )
    try:
        return MemoryInput(
            id=item_id(namespace, key),
            text=text,
            kind=KIND,
            tags=tags,
            source=bounded_source(SOURCE_PREFIX, payload, f"the namespace and key of {where}"),
        )
    except ValidationError as exc:
        raise BadInputError(f"{where}: {validation_message(exc)}") from exc


def _item(memory: _io.Stored) -> Item | None:
    """The item a memory keeps, or None when it is not an item."""
    payload = read_source(SOURCE_PREFIX, memory.source)
    if memory.kind != KIND or payload is None:
        return None
    field = payload.get("field")
    value = {field: memory.text} if field is not None else json.loads(memory.text)
    return Item(
        value=value,
        key=payload["key"],
        namespace=tuple(payload["ns"]),
        created_at=memory.recorded_at,
        updated_at=memory.recorded_at,
    )


def _indexed(memory: _io.Stored | None) -> bool:
    payload = None if memory is None else read_source(SOURCE_PREFIX, memory.source)
    return payload is not None and payload.get("index", True) is not False


def _search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _meets(namespace: Namespace, condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if not path:
        return True
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))
