"""``graphsvc mcp``: serve the memory tools over MCP on stdin/stdout, for an agent host.

Register it in the CLI's command table (``graphsvc.cli.COMMANDS``) as
``"mcp": ("graphsvc.mcp.cli:mcp_command", "...")``; ``python -m graphsvc.mcp`` runs it too.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


#: Where the host config's environment comes from: this shell's graphsvc settings. The data dir
#: goes in the arguments instead, and the keys file with its absolute path.
_NOT_COPIED = {"GRAPHSVC_DATA_DIR", "GRAPHSVC_API_KEYS_FILE"}


def host_config(
    settings: Settings,
    *,
    namespace: str | None,
    create: bool,
    environ: Mapping[str, str],
    executable: str,
) -> dict[str, Any]:
    """The ``mcpServers`` entry an agent host needs to start this ``graphsvc mcp``.

    The command is this Python (``executable``, absolute) running ``-m graphsvc.cli``, so the
    host needs no ``graphsvc`` on its PATH; the data dir and the keys file are absolute; the
    environment holds the ``GRAPHSVC_`` settings of ``environ`` (the key to work as, Neo4j, ...).

    Args:
        settings: the settings the server would run with (data dir, keys file).
        namespace: ``--namespace``, passed on when given.
        create: ``--create``, passed on when given (the first start creates the data dir).
        environ: the environment the settings came from.
        executable: the Python to run (``sys.executable``).
    """
    args = ["-m", "graphsvc.cli", "mcp"]
    if not settings.neo4j_uri:
        args += ["--data-dir", str(settings.data_dir.expanduser().absolute())]
        if create:
            args.append("--create")
    if namespace is not None:
        args += ["--namespace", namespace]
    env = {k: v for k, v in environ.items() if k.startswith("GRAPHSVC_") and k not in _NOT_COPIED}
    if settings.api_keys_file is not None:
        env["GRAPHSVC_API_KEYS_FILE"] = str(settings.api_keys_file.expanduser().absolute())
    entry: dict[str, Any] = {"command": str(Path(executable).absolute()), "args": args}
    if env:
        entry["env"] = dict(sorted(env.items()))
    return {"mcpServers": {"graphsvc": entry}}


def refuse_held_data_dir(settings: Settings) -> None:
    """Refuse to print a host config for an embedded store another process holds (a running
    ``graphsvc serve``): the host's server would fail to open it.

    Raises:
        BadInputError: the data dir is held; the message says what to do instead.
    """
    if settings.neo4j_uri:
        return
    from graphsvc.store.mirror.loader import data_dir_holder

    root = settings.data_dir.expanduser().absolute()
    holder = data_dir_holder(root) if root.is_dir() else None
    if holder is not None:
        raise BadInputError(
            f"data dir {root} is in use by another graphsvc process (pid {holder}), and the "
            "embedded store opens in one process at a time, so a host starting this entry "
            "would fail: connect the host to that server's /mcp over HTTP instead, give this "
            "MCP server a data dir of its own, or use Neo4j (GRAPHSVC_NEO4J_URI)"
        )


def mcp_api_key(settings: Settings) -> str | None:
    """The key the stdio server works as: the ``mcp_api_key`` setting (``GRAPHSVC_MCP_API_KEY``)."""
    secret = settings.mcp_api_key
    return None if secret is None else secret.get_secret_value()


@click.command("mcp", short_help=SHORT_HELP)
@data_dir_option
@create_option
@namespace_option
@click.option(
    "--keys-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="API keys file (JSON or TOML; default GRAPHSVC_API_KEYS_FILE). See "
    "examples/keys.example.toml.",
)
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the JSON an agent host needs to start this server (an mcpServers entry with "
    "absolute paths and the GRAPHSVC_ settings of this shell, checked first), and exit.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    show_default=True,
    help="Log level of the messages written to stderr.",
)
def mcp_command(
    data_dir: Path | None,
    create: bool,
    namespace: str | None,
    keys_file: Path | None,
    print_config: bool,
    log_level: str,
) -> None:
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

    --print-config prints the host configuration (an mcpServers entry) for the same options and
    environment, with absolute paths, after checking the key: paste it into the host's
    configuration file.
    """
    from graphsvc.mcp.stdio import configured_keys, run_stdio, stdio_principal

    logging.basicConfig(stream=sys.stderr, level=log_level.upper())
    try:
        settings = make_settings(data_dir, namespace, api_keys_file=keys_file)
        check_data_dir(settings, data_dir, create)
        api_key = mcp_api_key(settings)
        if print_config or (namespace is not None and api_key is not None):
            # The key is checked before a config is printed: a host config that cannot start is
            # worse than an error here.
            principal = stdio_principal(settings, configured_keys(settings), api_key)
            if namespace is not None and api_key is not None and principal.namespace != namespace:
                raise BadInputError(
                    f"the API key is for namespace {principal.namespace!r}, not {namespace!r}: "
                    "drop --namespace (a key's namespace is fixed), or use that namespace's key"
                )
            if print_config:
                refuse_held_data_dir(settings)
                config = host_config(
                    settings,
                    namespace=namespace,
                    create=create,
                    environ=os.environ,
                    executable=sys.executable,
                )
                click.echo(json.dumps(config, indent=2))
                click.echo(
                    f"graphsvc MCP server for namespace {principal.namespace!r} "
                    f"({principal.role.value} access): add the entry above to your host's MCP "
                    "configuration (it holds this shell's GRAPHSVC_ settings, the key included: "
                    "keep it private)",
                    err=True,
                )
                return
        run_stdio(settings, api_key)
    except GraphsvcError as exc:
        fail(exc)


__all__ = ["SHORT_HELP", "host_config", "mcp_api_key", "mcp_command", "refuse_held_data_dir"]
