"""The ``graphsvc`` command line.

Commands load lazily: the group maps each command name to ``module:attribute`` and imports it the
first time the command runs, so ``graphsvc --help`` imports neither the server (strawberry, uvicorn)
nor the stores (numpy, the Neo4j driver). Every store command takes ``--data-dir`` and
``--namespace`` and uses Neo4j when ``GRAPHSVC_NEO4J_URI`` is set, the embedded store otherwise.
Exit status: 0 success, 2 bad input (the message says what to fix), 3 the store is unavailable or
another error.

Evaluation and benchmarks (``eval``, ``bench``, ``bench-erase``, ``bench-http``, ``convert``) are
not part of graphsvc: they come with graphsvc-lab (``lab/`` in the checkout), which adds them
through the ``graphsvc.commands`` entry point. Without it, naming one of them says how to install
it.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

import click
from pydantic import ValidationError

from graphsvc.cli.common import fail
from graphsvc.errors import BadInputError, GraphsvcError, validation_message

# name -> (module:attribute, one-line help shown by --help without importing the module).
# tests/e2e/test_cli.py checks each line against the command's own help.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": (
        "graphsvc.cli.commands:demo",
        "Load the demo dataset into a fresh data dir; show a bundle and a belief.",
    ),
    "ingest": (
        "graphsvc.cli.commands:ingest_command",
        "Write memories and links from a JSON Lines FILE ('-' for stdin).",
    ),
    "import": (
        "graphsvc.cli.commands:import_command",
        "Import a JSON Lines FILE written by ``graphsvc export`` (same as ingest).",
    ),
    "export": (
        "graphsvc.cli.commands:export_command",
        "Write the namespace as JSON Lines to FILE (default stdout), ready for ``import``.",
    ),
    "bulk-export": (
        "graphsvc.cli.bulk:bulk_export",
        "Write Neo4j bulk-import files to DIRECTORY from a FILE written by ``graphsvc export``.",
    ),
    "bundle": (
        "graphsvc.cli.commands:bundle",
        "What memory offers a prompt for QUERY, under a token budget.",
    ),
    "reconstruct": (
        "graphsvc.cli.commands:reconstruct",
        "The belief memory supports about CUE: top hits plus the causal context around them.",
    ),
    "remember": ("graphsvc.cli.commands:remember", "Write one memory."),
    "erase": (
        "graphsvc.cli.erase:erase",
        "Erase the namespace, or the memories of a tag, source or time range; print a receipt.",
    ),
    "link": ("graphsvc.cli.commands:link", "Link memory SOURCE to TARGET with KIND."),
    "forget": (
        "graphsvc.cli.commands:forget",
        "Remove a memory, its links and the beliefs built on it.",
    ),
    "stats": ("graphsvc.cli.commands:stats", "Counts for the namespace."),
    "embed": (
        "graphsvc.cli.embed:embed",
        "Encode the memories that have no vector (resumable; --rebuild replaces them all).",
    ),
    "model": (
        "graphsvc.cli.model:model_group",
        "The embedding models graphsvc knows: list them, install one.",
    ),
    "drift": (
        "graphsvc.drift:drift",
        "Estimated against reported prompt tokens for RUN_ID: per step and overall.",
    ),
    "repair": (
        "graphsvc.store.repair:repair_command",
        "Check the embedded store's files; keep every record that verifies and move the rest "
        "aside.",
    ),
    "serve": (
        "graphsvc.api.serve:serve",
        "Serve the GraphQL API (GraphiQL at /graphql, /healthz, /readyz).",
    ),
    "mcp": (
        "graphsvc.mcp.cli:mcp_command",
        "Serve the memory tools over MCP on stdin/stdout, for an agent host.",
    ),
    "export-schema": (
        "graphsvc.api.export:export_schema",
        "Write the GraphQL schema to PATH (default ./schema.graphql; '-' for stdout).",
    ),
}

# Entry-point group of command tables shaped like COMMANDS (graphsvc-lab declares one).
PLUGINS = "graphsvc.commands"
# The commands graphsvc-lab brings, named here so that asking for one without it says what to do.
LAB_COMMANDS = ("bench", "bench-erase", "bench-http", "convert", "eval", "fingerprint")
LAB_INSTALL = "install graphsvc-lab: pip install -e lab (from a graphsvc checkout)"


class LazyGroup(click.Group):
    """A click group whose commands are imported on first use, and which turns graphsvc errors
    into a message and an exit status instead of a traceback.

    Args:
        lazy: name -> (``module:attribute``, one-line help) of the built-in commands.
        plugins: an entry-point group whose entries are tables shaped like ``lazy``, merged in
            (a built-in name wins) the first time the full list is needed; None for none.
    """

    def __init__(
        self,
        *args: Any,
        lazy: Mapping[str, tuple[str, str]],
        plugins: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)
        self.plugins = plugins

    def plugin_commands(self) -> None:
        """Merge the command tables of the installed plugins into ``lazy``, once. Reading the
        entry points imports only the small modules that hold the tables."""
        group, self.plugins = self.plugins, None
        if group is None:
            return
        for entry in entry_points(group=group):
            table: Mapping[str, tuple[str, str]] = entry.load()
            for name, spec in table.items():
                self.lazy.setdefault(name, spec)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.plugin_commands()
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name not in self.lazy:
            self.plugin_commands()
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = self.lazy[cmd_name][0].partition(":")
        command = getattr(import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[cmd_name][0]} is not a click command")
        self.add_command(command, cmd_name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else None
        if name in LAB_COMMANDS and self.get_command(ctx, name) is None:
            ctx.fail(
                f"'graphsvc {name}' comes with graphsvc-lab, the evaluation and benchmark tools "
                f"beside graphsvc, which is not installed: {LAB_INSTALL}."
            )
        return super().resolve_command(ctx, args)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        self.plugin_commands()
        absent = [name for name in LAB_COMMANDS if name not in self.lazy]
        if absent:
            formatter.write_paragraph()
            formatter.write_text(
                f"{', '.join(absent)}: not installed, they come with graphsvc-lab; {LAB_INSTALL}."
            )

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the one-line helps above: nothing is imported for --help."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy:
                text = click.Command(name, help=self.lazy[name][1]).get_short_help_str(limit)
            else:
                text = self.commands[name].get_short_help_str(limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphsvcError as exc:
            fail(exc)
        except ValidationError as exc:
            fail(BadInputError(validation_message(exc)))


cli = click.version_option(package_name="graphsvc")(
    LazyGroup(
        name="graphsvc",
        lazy=COMMANDS,
        plugins=PLUGINS,
        help="graphsvc: memory for LLM agents, on a graph.\n\n"
        "Uses Neo4j when GRAPHSVC_NEO4J_URI is set, the embedded store otherwise.",
    )
)


def main() -> None:
    """Entry point of the ``graphsvc`` console script."""
    cli(prog_name="graphsvc")


__all__ = ["COMMANDS", "LAB_COMMANDS", "PLUGINS", "LazyGroup", "cli", "main"]
