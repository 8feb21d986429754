"""graphsvc as an MCP server (the official ``mcp`` SDK's low-level :class:`~mcp.server.Server`).

Tools (:mod:`graphsvc.mcp.tools`): ``remember``, ``remember_many``, ``link``, ``forget``,
``bundle``, ``recall``, ``explain``, ``get_memory``, ``reconstruct``, ``memories``,
``prompt_bundle``, ``report_tokens``. Resources (JSON):
``graphsvc://memory/{id}`` (a memory with its links) and ``graphsvc://belief/{id}`` (a belief
stored by ``reconstruct``).

Who calls is a :class:`~graphsvc.api.auth.Principal` (namespace and role), found per request by
``principal_of``: over streamable HTTP from the request's ``Authorization: Bearer`` key
(:mod:`graphsvc.mcp.http`), over stdio from the key the process was started with
(:mod:`graphsvc.mcp.stdio`). Every tool works in that namespace only.

Errors: a :class:`~graphsvc.errors.GraphsvcError` becomes a tool result with ``isError`` whose
text starts with its code (``BAD_INPUT: budgetTokens must be at least 1, got 0``), with the same
code and message in ``structuredContent.error``; invalid arguments are ``BAD_INPUT`` naming the
argument; anything unexpected is logged with its traceback and answered as ``INTERNAL:
Unexpected error; error id ...``. A resource that cannot be read is a JSON-RPC error whose
message starts with the code the same way.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn
from uuid import UUID

from anyio import CapacityLimiter
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
)
from pydantic import ValidationError

from graphsvc.api.auth import Principal
from graphsvc.api.errors import PUBLIC_CODES
from graphsvc.errors import (
    BadInputError,
    GraphsvcError,
    NotFoundError,
    StoreUnavailableError,
    validation_message,
)
from graphsvc.mcp.tools import PROFILES
from graphsvc.mcp.tools.answers import to_json
from graphsvc.mcp.tools.common import Call, ToolSpec
from graphsvc.mcp.tools.schemas import input_schema, output_schema
from graphsvc.service import MemoryService

logger = logging.getLogger("graphsvc.mcp")

SERVER_NAME = "graphsvc"
MEMORY_URI = "graphsvc://memory/{id}"
BELIEF_URI = "graphsvc://belief/{id}"
_RESOURCE_RE = re.compile(r"^graphsvc://(memory|belief)/([^/?#]*)$")
JSON_MIME = "application/json"

INSTRUCTIONS = (
    "graphsvc is your long-term memory, on a graph: memories (facts, events, decisions) and the "
    "causal links between them, kept in one namespace per API key. Before answering a question "
    "that may depend on earlier sessions, call `recall` and respect its abstention (`skipped`), "
    "coverage (`evidenceCoverage`, `uncoveredWords`) and validity (a capsule not CURRENT is no "
    "longer true) fields; for 'why' questions call "
    "`explain` (or `reconstruct` to store the belief); `get_memory` reads memories by id. "
    "When you learn something worth keeping, call `remember` (or "
    "`remember_many`), and `link` how it relates to what you knew (CAUSES, PRECEDES, "
    "RELATES_TO, SUPERSEDES when a fact changed). Errors start with a code: BAD_INPUT and "
    "LIMIT_EXCEEDED (fix the arguments as the message says), NOT_FOUND, FORBIDDEN (a read-only "
    "key), UNAVAILABLE (retry later)."
)

#: The tools a server offers when its settings cannot be read (the store is not open yet).
DEFAULT_PROFILE = "agent"

ServiceSource = Callable[[], MemoryService | None]
PrincipalSource = Callable[[ServerRequestContext[Any, Any]], Principal]
LimiterSource = Callable[[], CapacityLimiter | None]

_UNAVAILABLE = "the store is not open (the server is starting or stopping): retry shortly"


def _graphsvc_version() -> str:
    try:
        return version("graphsvc")
    except PackageNotFoundError:  # a checkout that is not installed
        return "0"


def _no_limiter() -> CapacityLimiter | None:
    return None


def error_code(exc: GraphsvcError) -> str:
    """The code a caller sees: the error's own when public, else ``INTERNAL``."""
    return exc.code if exc.code in PUBLIC_CODES else "INTERNAL"


def error_result(code: str, message: str) -> CallToolResult:
    """A tool error the model reads: ``CODE: message`` as text, and as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"{code}: {message}")],
        structured_content={"error": {"code": code, "message": message}},
        is_error=True,
    )


def _unexpected(what: str) -> tuple[str, str]:
    """Log the exception being handled and return the masked code and message."""
    error_id = uuid.uuid4().hex
    logger.exception("unexpected error in %s", what, extra={"fields": {"error_id": error_id}})
    return "INTERNAL", f"Unexpected error; error id {error_id} (the server log has the details)"


def _tool_listing(profile: str = DEFAULT_PROFILE) -> list[Tool]:
    """The ``tools/list`` answer of a tool profile (``GRAPHSVC_MCP_TOOLS``)."""
    return [
        Tool(
            name=spec.name,
            title=spec.annotations.title,
            description=spec.description,
            input_schema=input_schema(spec),
            output_schema=output_schema(spec),
            annotations=spec.annotations,
        )
        for spec in PROFILES[profile]
    ]


def _templates() -> list[ResourceTemplate]:
    return [
        ResourceTemplate(
            name="memory",
            title="A memory",
            uri_template=MEMORY_URI,
            description="A memory of your namespace as JSON (the fields of the GraphQL type "
            "Memory, with `links`: every link touching it). Ids come from remember, memories, "
            "bundle capsules (`memoryId`) and reconstruct (`sourceIds`, `linkedContextIds`).",
            mime_type=JSON_MIME,
        ),
        ResourceTemplate(
            name="belief",
            title="A stored belief",
            uri_template=BELIEF_URI,
            description="A belief stored by the reconstruct tool (its `beliefId`), as JSON: "
            "cue, summary, confidence, sourceIds, linkedContextIds, createdAt.",
            mime_type=JSON_MIME,
        ),
    ]


class GraphsvcMcp:
    """The MCP request handlers over one service, for callers found by ``principal_of``.

    Args:
        service_of: the opened service, or ``None`` while the store is not open (calls then
            answer ``UNAVAILABLE``).
        principal_of: the caller of a request; raises UnauthenticatedError when there is none.
        limiter_of: the limiter of the worker threads store calls run in (``None``: anyio's).
    """

    def __init__(
        self,
        service_of: ServiceSource,
        principal_of: PrincipalSource,
        limiter_of: LimiterSource = _no_limiter,
    ) -> None:
        self._service_of = service_of
        self._principal_of = principal_of
        self._limiter_of = limiter_of
        self._listings: dict[str, list[Tool]] = {}

    def _profile(self) -> str:
        """The tool profile of the service's settings (``GRAPHSVC_MCP_TOOLS``)."""
        service = self._service_of()
        return DEFAULT_PROFILE if service is None else service.settings.mcp_tools

    def _tools(self) -> dict[str, ToolSpec[Any]]:
        return {spec.name: spec for spec in PROFILES[self._profile()]}

    def _call(self, ctx: ServerRequestContext[Any, Any]) -> Call:
        principal = self._principal_of(ctx)
        service = self._service_of()
        if service is None:
            raise StoreUnavailableError(_UNAVAILABLE)
        return Call(service=service, principal=principal, limiter=self._limiter_of())

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        profile = self._profile()
        if profile not in self._listings:
            self._listings[profile] = _tool_listing(profile)
        return ListToolsResult(tools=self._listings[profile])

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult:
        tools = self._tools()
        spec = tools.get(params.name)
        if spec is None:
            known = ", ".join(tools)
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"BAD_INPUT: unknown tool {params.name!r}: use one of {known}",
            )
        try:
            call = self._call(ctx)
            args = spec.parse(call.service, params.arguments or {})
            reply = await spec(call, args)
        except GraphsvcError as exc:
            code = error_code(exc)
            if code == "INTERNAL":
                code, message = _unexpected(f"tool {spec.name}")
                return error_result(code, message)
            return error_result(code, str(exc))
        except ValidationError as exc:
            return error_result("BAD_INPUT", validation_message(exc))
        except Exception:
            return error_result(*_unexpected(f"tool {spec.name}"))
        return CallToolResult(
            content=[TextContent(type="text", text=reply.text)], structured_content=reply.data
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        # Memories and beliefs are many and per namespace: they are reached by template.
        return ListResourcesResult(resources=[])

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=_templates())

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        uri = str(params.uri)
        try:
            data = await self._read(ctx, uri)
        except GraphsvcError as exc:
            code = error_code(exc)
            message = str(exc)
            if code == "INTERNAL":
                code, message = _unexpected(f"resource {uri}")
            self._raise(code, message, uri)
        except Exception:
            self._raise(*_unexpected(f"resource {uri}"), uri)
        text = json.dumps(data, ensure_ascii=False)
        return ReadResourceResult(
            contents=[TextResourceContents(uri=uri, mime_type=JSON_MIME, text=text)]
        )

    @staticmethod
    def _raise(code: str, message: str, uri: str) -> NoReturn:
        rpc = INVALID_PARAMS if code in {"BAD_INPUT", "NOT_FOUND", "LIMIT_EXCEEDED"} else None
        raise MCPError(
            code=rpc if rpc is not None else INTERNAL_ERROR,
            message=f"{code}: {message}",
            data={"code": code, "uri": uri},
        )

    async def _read(self, ctx: ServerRequestContext[Any, Any], uri: str) -> dict[str, Any]:
        match = _RESOURCE_RE.match(uri)
        if match is None:
            raise BadInputError(
                f"unknown resource {uri[:200]!r}: read {MEMORY_URI} or {BELIEF_URI}"
            )
        what, raw_id = match.groups()
        try:
            wanted = UUID(raw_id)
        except ValueError:
            raise BadInputError(f"{raw_id[:80]!r} is not a {what} id: send a UUID") from None
        call = self._call(ctx)
        if what == "memory":
            memory = await call.run(call.service.get_memory, call.namespace, wanted)
            if memory is None:
                raise NotFoundError(
                    f"no memory {wanted} in namespace {call.namespace!r}: check the id "
                    "(remember, memories and bundle return ids)"
                )
            links = await call.run(call.service.links_of, call.namespace, [wanted])
            return {**to_json(memory), "links": [lk.to_json_dict() for lk in links]}
        belief = await call.run(call.service.get_belief, call.namespace, wanted)
        if belief is None:
            raise NotFoundError(
                f"no belief {wanted} in namespace {call.namespace!r}: beliefs are stored by "
                "reconstruct (its beliefId), and removed when a memory they used is forgotten"
            )
        return belief.to_json_dict()

    def server(self) -> Server[Any]:
        """The SDK server with these handlers (no I/O: transports run it)."""
        return Server(
            SERVER_NAME,
            version=_graphsvc_version(),
            title="graphsvc memory",
            description="A graph-backed memory service for LLM agents.",
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
        )


def build_server(
    service_of: ServiceSource,
    principal_of: PrincipalSource,
    limiter_of: LimiterSource = _no_limiter,
) -> Server[Any]:
    """An MCP server over a service (see :class:`GraphsvcMcp`)."""
    return GraphsvcMcp(service_of, principal_of, limiter_of).server()


__all__ = [
    "BELIEF_URI",
    "INSTRUCTIONS",
    "MEMORY_URI",
    "SERVER_NAME",
    "GraphsvcMcp",
    "build_server",
    "error_result",
]
