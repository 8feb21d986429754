"""MCP over stdio: the process an agent host (Claude Desktop, an IDE, ...) starts and talks to on
its standard input and output.

The caller is fixed for the life of the process: :func:`stdio_principal` maps the key it was
started with (``GRAPHSVC_MCP_API_KEY``) to a namespace and role with the same API keys as the HTTP
server; with no keys configured and no key given it is the anonymous writer of
``GRAPHSVC_NAMESPACE`` (the process is the host's own child: nothing else can talk to it).
Standard output carries the protocol only: logs go to standard error.
"""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from graphsvc.api.auth import ApiKeys, Principal, anonymous
from graphsvc.bootstrap import bootstrap
from graphsvc.errors import BadInputError, UnauthenticatedError
from graphsvc.mcp.server import build_server
from graphsvc.service import MemoryService
from graphsvc.settings import Settings

KEY_SETTING = "GRAPHSVC_MCP_API_KEY"


def configured_keys(settings: Settings) -> ApiKeys:
    """The API keys of ``GRAPHSVC_API_KEYS`` and ``GRAPHSVC_API_KEYS_FILE`` (as the server reads
    them).

    Raises:
        BadInputError: a key entry or the keys file is invalid (the message names it).
    """
    secret = settings.api_keys.get_secret_value() if settings.api_keys else None
    return ApiKeys.configured(secret, settings.api_keys_file)


def stdio_principal(settings: Settings, keys: ApiKeys, api_key: str | None) -> Principal:
    """Who the stdio process works for.

    Args:
        settings: the namespace of the anonymous caller.
        keys: the configured API keys.
        api_key: the key the process was started with (``GRAPHSVC_MCP_API_KEY``), if any.

    Raises:
        BadInputError: keys are configured and no key or an unknown one was given, or a key was
            given and no keys are configured (it could not be checked).
    """
    if api_key is None or not api_key.strip():
        if len(keys):
            raise BadInputError(
                f"API keys are configured, so the MCP server needs one: set {KEY_SETTING} to a "
                "key of GRAPHSVC_API_KEYS or GRAPHSVC_API_KEYS_FILE"
            )
        return anonymous(settings.namespace)
    if not len(keys):
        raise BadInputError(
            f"{KEY_SETTING} is set but no API keys are configured, so it cannot be checked: add "
            "it to GRAPHSVC_API_KEYS ('key=namespace:role') or GRAPHSVC_API_KEYS_FILE, or unset "
            f"it to work in namespace {settings.namespace!r} with write access"
        )
    try:
        return keys.authenticate(api_key.strip())
    except UnauthenticatedError as exc:
        raise BadInputError(f"{KEY_SETTING}: {exc}") from exc


async def serve_stdio(service: MemoryService, principal: Principal) -> None:
    """Serve MCP on this process's stdin/stdout until the host closes stdin."""
    server = build_server(lambda: service, lambda ctx: principal)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(settings: Settings, api_key: str | None) -> None:
    """Open the store, serve MCP over stdio for the caller of ``api_key``, close the store.

    Args:
        settings: the store, the namespace of an anonymous caller, the API keys.
        api_key: the key to work as (``GRAPHSVC_MCP_API_KEY``); ``None`` with no keys configured.

    Raises:
        BadInputError: the key does not fit the configured keys (see :func:`stdio_principal`).
        StoreUnavailableError: the store cannot be opened (the embedded store is locked by another
            process, or Neo4j does not answer).
    """
    principal = stdio_principal(settings, configured_keys(settings), api_key)
    service = bootstrap(settings)
    try:
        # The process owns the store: it drains the vector queue in the background, as
        # `graphsvc serve` does (service.close stops it).
        service.vector_queue.start("graphsvc mcp")
        anyio.run(serve_stdio, service, principal)
    finally:
        service.close()


__all__ = ["KEY_SETTING", "configured_keys", "run_stdio", "serve_stdio", "stdio_principal"]
