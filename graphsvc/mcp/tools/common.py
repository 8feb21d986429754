"""What every tool is made of: one call (:class:`Call`), its answer (:class:`Reply`), the tool's
specification (:class:`ToolSpec`) and what a host may assume about it (:func:`hints`)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import anyio.to_thread
from anyio import CapacityLimiter
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from graphsvc.api.auth import Principal
from graphsvc.service import MemoryService

T = TypeVar("T")
A = TypeVar("A", bound=BaseModel)

#: The end of the description of a tool that writes.
WRITES = "Needs a write key."


@dataclass(frozen=True)
class Call:
    """What a tool call works with: the service, the caller, and the worker threads."""

    service: MemoryService
    principal: Principal
    limiter: CapacityLimiter | None = None

    @property
    def namespace(self) -> str:
        return self.principal.namespace

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Call a synchronous service function in a worker thread (stores block)."""
        call = functools.partial(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self.limiter)


@dataclass(frozen=True)
class Reply:
    """A tool's answer: the JSON (GraphQL field names) and a short text rendering."""

    data: dict[str, Any]
    text: str


@dataclass(frozen=True)
class ToolSpec(Generic[A]):
    """One tool: its name, what it is for, its argument and result models, where GraphQL
    describes the same operation (``(root type, field)``), and what it does."""

    name: str
    description: str
    args: type[A]
    result: type[BaseModel]
    graphql: tuple[str, str]
    annotations: ToolAnnotations
    handler: Callable[[Call, A], Awaitable[Reply]]
    precheck: Callable[[MemoryService, Mapping[str, Any]], None] | None = None
    #: A tool for the harness that drives an agent (prompt assembly, token reports), which an
    #: agent itself never calls: left out of the ``agent`` profile.
    harness: bool = False

    def parse(self, service: MemoryService, arguments: Mapping[str, Any]) -> A:
        """The validated arguments.

        Raises:
            pydantic.ValidationError: an argument is missing, unknown or of the wrong type.
            LimitExceededError: a batch larger than the settings allow (checked first).
        """
        if self.precheck is not None:
            self.precheck(service, arguments)
        return self.args.model_validate(dict(arguments))

    async def __call__(self, call: Call, args: BaseModel) -> Reply:
        return await self.handler(call, cast("A", args))


def hints(
    title: str,
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool | None = None,
) -> ToolAnnotations:
    """What a host may assume about a tool: every tool stays inside graphsvc (a closed world)."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


__all__ = ["WRITES", "Call", "Reply", "ToolSpec", "hints"]
