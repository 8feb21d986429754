"""Writes of memories and links: ``remember``, ``remember_many``, ``link``, ``forget``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from graphsvc.errors import LimitExceededError
from graphsvc.mcp.tools.answers import RememberManyResult, memory_line, short, to_json
from graphsvc.mcp.tools.common import WRITES, Call, Reply, ToolSpec, hints
from graphsvc.model import ForgetReceipt, Link, LinkInput, Memory, MemoryInput, Model
from graphsvc.service import MemoryService

# -- arguments ------------------------------------------------------------------------------------


class RememberArgs(MemoryInput):
    """A memory to write, and the run to record a memory_write event for."""

    run_id: str | None = None
    step: int = 0

    def item(self) -> MemoryInput:
        """The memory input alone (without the run fields)."""
        return MemoryInput.model_validate(self.model_dump(exclude={"run_id", "step"}))


class RememberManyArgs(Model):
    """Memories to write, all or nothing."""

    inputs: tuple[MemoryInput, ...]
    run_id: str | None = None
    step: int = 0


class LinkArgs(LinkInput):
    """A link to write between two memories of the caller's namespace."""


class ForgetArgs(Model):
    """The memory to forget."""

    id: UUID


# -- what they do ---------------------------------------------------------------------------------


async def remember(call: Call, args: RememberArgs) -> Reply:
    call.principal.require_write("remember")
    stored = await call.run(
        call.service.remember, call.namespace, args.item(), run_id=args.run_id, step=args.step
    )
    return Reply(to_json(stored), f"Remembered {stored.id}: {short(stored.text)}")


def _check_batch(service: MemoryService, arguments: Mapping[str, Any]) -> None:
    """The batch limit before anything else, as GraphQL's rememberMany checks it (validating
    an oversized batch item by item first would cost as much as the batch)."""
    inputs = arguments.get("inputs")
    limit = service.settings.max_batch
    if isinstance(inputs, list | tuple) and len(inputs) > limit:
        raise LimitExceededError(
            f"{len(inputs)} memories in one write; the limit is {limit} "
            "(GRAPHSVC_MAX_BATCH): split the batch"
        )


async def remember_many(call: Call, args: RememberManyArgs) -> Reply:
    call.principal.require_write("remember_many")
    stored = await call.run(
        call.service.remember_many,
        call.namespace,
        list(args.inputs),
        run_id=args.run_id,
        step=args.step,
    )
    result = RememberManyResult(memories=tuple(stored))
    lines = [f"Remembered {len(stored)} memory(ies), in input order:"]
    lines += [memory_line(memory) for memory in stored]
    return Reply(to_json(result), "\n".join(lines))


async def link(call: Call, args: LinkArgs) -> Reply:
    call.principal.require_write("link")
    item = LinkInput.model_validate(args.model_dump())
    made = await call.run(call.service.link, call.namespace, item)
    return Reply(made.to_json_dict(), f"Linked {made.source} -[{made.kind.value}]-> {made.target}")


async def forget(call: Call, args: ForgetArgs) -> Reply:
    call.principal.require_write("forget")
    receipt = await call.run(call.service.forget, call.namespace, args.id)
    text = (
        f"Forgot {receipt.memory_id}: removed {len(receipt.removed_links)} link(s) and "
        f"{len(receipt.removed_belief_ids)} belief(s) built on it."
    )
    return Reply(receipt.to_json_dict(), text)


# -- the tools ------------------------------------------------------------------------------------

REMEMBER = ToolSpec(
    name="remember",
    description="Store one memory (fact, event, decision, observation) so later questions can "
    "recall it. Give `occurredAt` for events, `validFrom`/`validUntil` for facts true "
    "over a period, a `kind` and `tags`. The same content again is a no-op (retry-safe). "
    f"Returns the memory; its `id` is what link and forget take. {WRITES}",
    args=RememberArgs,
    result=Memory,
    graphql=("Mutation", "remember"),
    annotations=hints("Remember", idempotent=True),
    handler=remember,
)
REMEMBER_MANY = ToolSpec(
    name="remember_many",
    description="Store several memories at once, all or nothing (at most GRAPHSVC_MAX_BATCH). "
    "Same rules as remember. Returns `memories` in input order. "
    f"{WRITES}",
    args=RememberManyArgs,
    result=RememberManyResult,
    graphql=("Mutation", "rememberMany"),
    annotations=hints("Remember many", idempotent=True),
    handler=remember_many,
    precheck=_check_batch,
)
LINK = ToolSpec(
    name="link",
    description="Relate two memories: CAUSES (source caused target), PRECEDES (source came "
    "first), RELATES_TO, SUPERSEDES (source is newer and replaces target: a fact that "
    "changed; the older one is then marked superseded). Both must exist. "
    f"{WRITES}",
    args=LinkArgs,
    result=Link,
    graphql=("Mutation", "link"),
    annotations=hints("Link memories", idempotent=True),
    handler=link,
)
FORGET = ToolSpec(
    name="forget",
    description="Remove a memory for good, with its links and the beliefs built on it. For "
    "wrong or private information; when a fact changed, remember the new one and link it "
    f"SUPERSEDES the old one instead. {WRITES}",
    args=ForgetArgs,
    result=ForgetReceipt,
    graphql=("Mutation", "forget"),
    annotations=hints("Forget", destructive=True, idempotent=False),
    handler=forget,
)

__all__ = [
    "FORGET",
    "LINK",
    "REMEMBER",
    "REMEMBER_MANY",
    "ForgetArgs",
    "LinkArgs",
    "RememberArgs",
    "RememberManyArgs",
]
