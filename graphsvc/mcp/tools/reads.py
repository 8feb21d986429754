"""Reads of memories: ``get_memory`` (by id, with their links) and ``memories`` (a page)."""

from __future__ import annotations

from uuid import UUID

from pydantic import Field

from graphsvc.api.context import Limits, decode_cursor, encode_cursor
from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.mcp.tools.answers import (
    GetMemoryResult,
    MemoryConnection,
    PageInfo,
    full_memory_line,
    memory_line,
    to_json,
)
from graphsvc.mcp.tools.common import Call, Reply, ToolSpec, hints
from graphsvc.model import Model, UtcDateTime

# -- arguments ------------------------------------------------------------------------------------


class GetMemoryArgs(Model):
    """Memories to read by id."""

    ids: tuple[UUID, ...] = Field(
        min_length=1,
        description="Ids of memories of your namespace (from remember, memories, bundle "
        "capsules' `memoryId`, reconstruct's `sourceIds` and `linkedContextIds`).",
    )


class MemoriesArgs(Model):
    """A page of memories, newest first, with filters."""

    first: int | None = None
    after: str | None = None
    kind: str | None = None
    tag: str | None = None
    since: UtcDateTime | None = None
    until: UtcDateTime | None = None


# -- what they do ---------------------------------------------------------------------------------


async def get_memory(call: Call, args: GetMemoryArgs) -> Reply:
    limit = Limits.from_settings(call.service.settings).max_page_size
    ids = tuple(dict.fromkeys(args.ids))  # each once, in the order asked
    if len(ids) > limit:
        raise LimitExceededError(
            f"{len(ids)} ids in one call; the limit is {limit} (GRAPHSVC_MAX_PAGE_SIZE): "
            "ask in smaller groups"
        )
    found = await call.run(call.service.get_memories, call.namespace, ids)
    by_id = {memory.id: memory for memory in found}
    kept = tuple(by_id[i] for i in ids if i in by_id)
    links = await call.run(call.service.links_of, call.namespace, [m.id for m in kept])
    missing = tuple(i for i in ids if i not in by_id)
    result = GetMemoryResult(memories=kept, links=tuple(links), not_found=missing)
    lines = [f"{len(kept)} of {len(ids)} memory(ies) found:"] if kept else []
    lines += [full_memory_line(memory) for memory in kept]
    lines += [f"- link {lk.source} -[{lk.kind.value}]-> {lk.target}" for lk in links]
    lines += [
        f"- not found: {i} (no memory with this id in your namespace: never written, "
        "forgotten, or another namespace's)"
        for i in missing
    ]
    return Reply(to_json(result), "\n".join(lines))


async def memories(call: Call, args: MemoriesArgs) -> Reply:
    limits = Limits.from_settings(call.service.settings)
    size = limits.default_page_size if args.first is None else args.first
    if size < 1:
        raise BadInputError(f"first must be at least 1, got {size}")
    if size > limits.max_page_size:
        raise LimitExceededError(
            f"first must be at most {limits.max_page_size}, got {size}: page with `after`"
        )
    key = None if args.after is None else decode_cursor(args.after)
    rows = await call.run(
        call.service.list_memories,
        call.namespace,
        after=key,
        limit=size + 1,
        kind=args.kind,
        tag=args.tag,
        since=args.since,
        until=args.until,
    )
    page = rows[:size]
    more = len(rows) > size
    end = encode_cursor(page[-1]) if page else None
    result = MemoryConnection(
        nodes=tuple(page), page_info=PageInfo(has_next_page=more, end_cursor=end)
    )
    lines = [f"{len(page)} memory(ies), newest first:"] + [memory_line(m) for m in page]
    lines.append(f"More: call again with after={end!r}." if more else "No more memories.")
    return Reply(to_json(result), "\n".join(lines))


# -- the tools ------------------------------------------------------------------------------------

GET_MEMORY = ToolSpec(
    name="get_memory",
    description="Read memories by id (from any other answer), with their whole text and links; "
    "ids with no memory are listed in `notFound`.",
    args=GetMemoryArgs,
    result=GetMemoryResult,
    graphql=("Query", "memory"),
    annotations=hints("Read memories by id", read_only=True, idempotent=True),
    handler=get_memory,
)
MEMORIES = ToolSpec(
    name="memories",
    description="Browse memories newest first, a page at a time, by `kind`, `tag` and a time "
    "range [`since`, `until`); pass `pageInfo.endCursor` as `after` for the next page. "
    "To answer a question, use recall.",
    args=MemoriesArgs,
    result=MemoryConnection,
    graphql=("Query", "memories"),
    annotations=hints("Browse memories", read_only=True),
    handler=memories,
)

__all__ = ["GET_MEMORY", "MEMORIES", "GetMemoryArgs", "MemoriesArgs"]
