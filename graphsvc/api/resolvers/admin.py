"""The namespace and the caller: ``stats``, ``overview``, ``viewer``."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graphsvc import model as m
from graphsvc import overview as ov
from graphsvc.api.context import Info
from graphsvc.api.types import AsOfMode, NamespaceStats, Overview, Viewer, arg, resolver


@strawberry.type
class AdminQuery:
    @resolver("Counts for the caller's namespace.", NamespaceStats)
    async def stats(self, info: Info) -> m.NamespaceStats:
        ctx = info.context
        return await ctx.run(ctx.service.stats, ctx.namespace)

    @resolver(
        "The caller's namespace at a glance: memories by kind, tag, source and day, and the "
        "largest causal components (CAUSES and PRECEDES links). Counts are kept at write time; "
        "components are searched from the newest memories, within bounds it reports.",
        Overview,
    )
    async def overview(
        self,
        info: Info,
        top: Annotated[int, arg(f"Values of each facet, and components (1 to {ov.MAX_TOP}).")] = 10,
        days: Annotated[int, arg(f"Latest days with memories (1 to {ov.MAX_DAYS}).")] = 31,
    ) -> ov.Overview:
        ctx = info.context
        ctx.service.check_namespace(ctx.namespace)
        return await ctx.run(ov.overview, ctx.service.store, ctx.namespace, top, days)

    @resolver(
        "The days on which a view of the past changes, the latest `days` of them, oldest first "
        "(YYYY-MM-DD, UTC): for VALID the days a memory's validity starts or ends (a newer "
        "memory that SUPERSEDES another closes it on the day it starts), for KNOWN the days "
        "memories were recorded. What a time slider steps through; kept at write time."
    )
    async def as_of_days(
        self,
        info: Info,
        mode: Annotated[AsOfMode, arg("VALID (what was true) or KNOWN (what was recorded).")],
        days: Annotated[int, arg(f"Latest days (1 to {ov.MAX_DAYS}).")] = ov.MAX_DAYS,
    ) -> list[str]:
        ctx = info.context
        ctx.service.check_namespace(ctx.namespace)
        return await ctx.run(ov.as_of_days, ctx.service.store, ctx.namespace, mode.value, days)

    @resolver("The caller: namespace, role and key fingerprint.")
    def viewer(self, info: Info) -> Viewer:
        caller = info.context.caller
        return Viewer(namespace=caller.namespace, role=caller.role.value, key_id=caller.key_id)


__all__ = ["AdminQuery"]
