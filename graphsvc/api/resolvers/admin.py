"""The namespace and the caller: ``stats``, ``viewer``."""

from __future__ import annotations

import strawberry

from graphsvc import model as m
from graphsvc.api.context import Info
from graphsvc.api.types import NamespaceStats, Viewer, resolver


@strawberry.type
class AdminQuery:
    @resolver("Counts for the caller's namespace.", NamespaceStats)
    async def stats(self, info: Info) -> m.NamespaceStats:
        ctx = info.context
        return await ctx.run(ctx.service.stats, ctx.namespace)

    @resolver("The caller: namespace, role and key fingerprint.")
    def viewer(self, info: Info) -> Viewer:
        caller = info.context.caller
        return Viewer(namespace=caller.namespace, role=caller.role.value, key_id=caller.key_id)


__all__ = ["AdminQuery"]
