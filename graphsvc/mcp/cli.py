"""``graphsvc mcp``: serve the memory tools over MCP on stdin/stdout, for an agent host.

Register it in the CLI's command table (``graphsvc.cli.COMMANDS``) as
``"mcp": ("graphsvc.mcp.cli:mcp_command", "...")``; ``python -m graphsvc.mcp`` runs it too.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from graphsvc.cli.common import (
    check_data_dir,
    create_option,
    data_dir_option,
    fail,
    make_settings,
    namespace_option,
)
from graphsvc.errors import BadInputError, GraphsvcError
from graphsvc.settings import Settings

SHORT_HELP = "Serve the memory tools over MCP on stdin/stdout, for an agent host."


def mcp_api_key(settings: Settings) -> str | None:
    """The key the stdio server works as: the ``mcp_api_key`` setting (``GRAPHSVC_MCP_API_KEY``)."""
    secret = settings.mcp_api_key
    return None if secret is None else secret.get_secret_value()


@click.command("mcp", short_help=SHORT_HELP)
@data_dir_option
@create_option
@namespace_option
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    show_default=True,
    help="Log level of the messages written to stderr.",
)
def mcp_command(data_dir: Path | None, create: bool, namespace: str | None, log_level: str) -> None:
    """Serve the memory tools over MCP on stdin/stdout, for an agent host.

    Tools: remember, remember_many, link, forget, bundle, recall, explain, get_memory,
    reconstruct, memories, prompt_bundle, report_tokens; resources graphsvc://memory/{id} and
    graphsvc://belief/{id}. Uses Neo4j when GRAPHSVC_NEO4J_URI is set, the embedded store
    otherwise (which one process opens at a time: not the data dir of a running `graphsvc
    serve`).

    With API keys configured (GRAPHSVC_API_KEYS or GRAPHSVC_API_KEYS_FILE), set
    GRAPHSVC_MCP_API_KEY to one of them: the server works in its namespace, with its role.
    Without keys it works in --namespace (default GRAPHSVC_NAMESPACE or 'default') with write
    access. Stdout carries the protocol only; logs go to stderr.
    """
    from graphsvc.mcp.stdio import configured_keys, run_stdio, stdio_principal

    logging.basicConfig(stream=sys.stderr, level=log_level.upper())
    try:
        settings = make_settings(data_dir, namespace)
        check_data_dir(settings, data_dir, create)
        api_key = mcp_api_key(settings)
        if namespace is not None and api_key is not None:
            principal = stdio_principal(settings, configured_keys(settings), api_key)
            if principal.namespace != namespace:
                raise BadInputError(
                    f"the API key is for namespace {principal.namespace!r}, not {namespace!r}: "
                    "drop --namespace (a key's namespace is fixed), or use that namespace's key"
                )
        run_stdio(settings, api_key)
    except GraphsvcError as exc:
        fail(exc)


__all__ = ["SHORT_HELP", "mcp_api_key", "mcp_command"]
