"""Memories and links: ``memory``, ``memories``; ``remember``, ``rememberMany``, ``link``,
``linkMany``, ``forget``, ``erase``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

import strawberry

from graphsvc import model as m
from graphsvc.api.context import Info, decode_cursor, encode_cursor
from graphsvc.api.inputs import EraseInput, LinkInput, MemoryInput, to_domain
from graphsvc.api.resolvers.common import OptionalRunId, Step, check_batch
from graphsvc.api.types import (
    EraseReceipt,
    ForgetReceipt,
    Link,
    Memory,
    MemoryConnection,
    MemoryEdge,
    PageInfo,
    arg,
    mutation,
    resolver,
)
from graphsvc.errors import BadInputError, LimitExceededError


@strawberry.type
class MemoryQuery:
    @resolver("A memory by id, or null when the namespace has none.", Memory | None)
    async def memory(
        self, info: Info, id: Annotated[UUID, arg("The memory's id.")]
    ) -> m.Memory | None:
        ctx = info.context
        return await ctx.run(ctx.service.get_memory, ctx.namespace, id)

    @resolver(
        "Memories, newest first, a page at a time. Filters: `kind`, `tag`, a time range "
        "[`since`, `until`) on occurredAt (recordedAt for memories without one), and "
        "`knownAsOf`."
    )
    async def memories(
        self,
        info: Info,
        first: Annotated[int | None, arg("Page size (default 20, at most 100).")] = None,
        after: Annotated[str | None, arg("endCursor of the previous page.")] = None,
        kind: Annotated[str | None, arg("Only memories of this kind.")] = None,
        tag: Annotated[str | None, arg("Only memories with this tag.")] = None,
        since: Annotated[datetime | None, arg("Only memories at or after this time.")] = None,
        until: Annotated[datetime | None, arg("Only memories before this time.")] = None,
        known_as_of: Annotated[
            datetime | None,
            arg(
                "Only memories recorded at or before this instant (a time zone is required): "
                "the list as memory held it then, asOfMode KNOWN. What was true then (VALID) "
                "is asked of bundle."
            ),
        ] = None,
    ) -> MemoryConnection:
        ctx = info.context
        size = ctx.limits.default_page_size if first is None else first
        if size < 1:
            raise BadInputError(f"first must be at least 1, got {size}")
        if size > ctx.limits.max_page_size:
            raise LimitExceededError(
                f"first must be at most {ctx.limits.max_page_size}, got {size}: page with `after`"
            )
        key = None if after is None else decode_cursor(after)
        rows = await ctx.run(
            ctx.service.list_memories,
            ctx.namespace,
            after=key,
            limit=size + 1,
            kind=kind,
            tag=tag,
            since=None if since is None else m.as_utc(since),
            until=None if until is None else m.as_utc(until),
            known_as_of=known_as_of,
        )
        page = rows[:size]
        edges = [MemoryEdge(cursor=encode_cursor(memory), node=memory) for memory in page]
        return MemoryConnection(
            edges=edges,
            nodes=page,
            page_info=PageInfo(
                has_next_page=len(rows) > size, end_cursor=edges[-1].cursor if edges else None
            ),
        )


@strawberry.type
class MemoryMutation:
    @mutation("Write one memory. With `runId`, a memory_write event is recorded at `step`.", Memory)
    async def remember(
        self,
        info: Info,
        input: Annotated[MemoryInput, arg("The memory.")],
        run_id: OptionalRunId = None,
        step: Step = 0,
    ) -> m.Memory:
        ctx = info.context
        ctx.caller.require_write("remember")
        item = to_domain(m.MemoryInput, input, "input")
        return await ctx.run(ctx.service.remember, ctx.namespace, item, run_id=run_id, step=step)

    @mutation(
        "Write memories, all or nothing (at most GRAPHSVC_MAX_BATCH); returned in input order. "
        "Send large batches as variables.",
        list[Memory],
    )
    async def remember_many(
        self,
        info: Info,
        inputs: Annotated[list[MemoryInput], arg("The memories, in order.")],
        run_id: OptionalRunId = None,
        step: Step = 0,
        wait_for_vectors: Annotated[
            bool | None,
            arg(
                "true: answer once the memories' vectors are stored, so that the next read "
                "finds them by meaning (the write runs at the encoder's speed); false: answer at "
                "lexical speed, the vectors following from the vector queue; null: the "
                "server's GRAPHSVC_EMBED_WRITES."
            ),
        ] = None,
    ) -> list[m.Memory]:
        ctx = info.context
        ctx.caller.require_write("rememberMany")
        check_batch(len(inputs), "memories", ctx.service.settings.max_batch)
        items = [to_domain(m.MemoryInput, item, f"inputs.{i}") for i, item in enumerate(inputs)]
        return await ctx.run(
            ctx.service.remember_many,
            ctx.namespace,
            items,
            run_id=run_id,
            step=step,
            wait_for_vectors=wait_for_vectors,
        )

    @mutation("Link two memories of the caller's namespace.", Link)
    async def link(self, info: Info, input: Annotated[LinkInput, arg("The link.")]) -> m.Link:
        ctx = info.context
        ctx.caller.require_write("link")
        item = to_domain(m.LinkInput, input, "input")
        return await ctx.run(ctx.service.link, ctx.namespace, item)

    @mutation("Write links, all or nothing; returned in input order.", list[Link])
    async def link_many(
        self, info: Info, inputs: Annotated[list[LinkInput], arg("The links.")]
    ) -> list[m.Link]:
        ctx = info.context
        ctx.caller.require_write("linkMany")
        check_batch(len(inputs), "links", ctx.service.settings.max_batch)
        items = [to_domain(m.LinkInput, item, f"inputs.{i}") for i, item in enumerate(inputs)]
        return await ctx.run(ctx.service.link_many, ctx.namespace, items)

    @mutation(
        "Remove a memory, its links and the beliefs built on it; say what was removed.",
        ForgetReceipt,
    )
    async def forget(
        self, info: Info, id: Annotated[UUID, arg("The memory to forget.")]
    ) -> m.ForgetReceipt:
        ctx = info.context
        ctx.caller.require_write("forget")
        return await ctx.run(ctx.service.forget, ctx.namespace, id)

    @mutation(
        "Erase the whole namespace (`everything`), or every memory matching all the filters "
        "given, with their links and the beliefs built on them; say what was removed. A large "
        "erase may answer `complete: false` (it stopped at its time budget): send the same input "
        "again to finish it, as after an interruption.",
        EraseReceipt,
    )
    async def erase(
        self, info: Info, input: Annotated[EraseInput, arg("What to erase.")]
    ) -> m.EraseReceipt:
        ctx = info.context
        ctx.caller.require_write("erase")
        spec = to_domain(m.EraseFilter, input, "input")
        return await ctx.run(
            ctx.service.erase,
            ctx.namespace,
            everything=spec.everything,
            tag=spec.tag,
            source=spec.source,
            since=spec.since,
            until=spec.until,
        )


__all__ = ["MemoryMutation", "MemoryQuery"]
