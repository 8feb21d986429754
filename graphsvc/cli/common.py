"""What every ``graphsvc`` command shares: exit statuses, the ``--data-dir``/``--namespace``
options, settings with the command line's overrides, an opened service, and error reporting.

Nothing here imports the service or a store at import time (``opened`` imports them when a command
runs), so ``graphsvc --help`` stays fast and light.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from pydantic import ValidationError

from graphsvc.errors import (
    BadInputError,
    GraphsvcError,
    LimitExceededError,
    NotFoundError,
    validation_message,
)
from graphsvc.settings import Settings, default_data_dir

if TYPE_CHECKING:
    from graphsvc.service import MemoryService

F = TypeVar("F", bound=Callable[..., Any])

#: Exit status for input the caller can fix (the message says how).
BAD_INPUT_EXIT = 2
#: Exit status when the store is unavailable (or another error that is not the caller's).
UNAVAILABLE_EXIT = 3

TEMPORARY_DATA_DIR_HELP = (
    "Embedded store folder (default: a fresh temporary one, deleted afterwards; ignored with "
    "GRAPHSVC_NEO4J_URI)."
)


def data_dir_flag(
    help: str = "Embedded store folder (default: GRAPHSVC_DATA_DIR or ~/.local/share/graphsvc).",
) -> Callable[[F], F]:
    """The ``--data-dir`` option (a folder, ``None`` when not given), with this help."""
    return click.option(
        "--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help=help
    )


data_dir_option = data_dir_flag()
namespace_option = click.option(
    "--namespace",
    default=None,
    help="Namespace to use (default: GRAPHSVC_NAMESPACE or 'default').",
)


create_option = click.option(
    "--create",
    is_flag=True,
    help="Create --data-dir when it does not exist (a new, empty store). Without it a missing "
    "--data-dir is refused, so a typo does not start an empty store.",
)


def check_data_dir(
    settings: Settings, data_dir: Path | None, create: bool, *, read_only: bool = False
) -> None:
    """Refuse a ``--data-dir`` that does not exist (a typo would open a new, empty store),
    unless ``create``. The default folder (and ``GRAPHSVC_DATA_DIR``) is created as before,
    and nothing is checked when Neo4j is the store.

    Raises:
        BadInputError: ``data_dir`` was given, does not exist, and ``create`` is false.
    """
    if data_dir is None or create or settings.neo4j_uri or data_dir.exists():
        return
    if data_dir.expanduser().resolve() == default_data_dir().resolve():
        return
    if read_only:  # nothing to read: an empty store would look like data lost
        raise BadInputError(
            f"--data-dir {data_dir}: no such folder, so no store to read. Check the path (an "
            "existing store's folder holds its log.jsonl)"
        )
    raise BadInputError(
        f"--data-dir {data_dir}: no such folder. Check the path (an existing store's folder "
        "holds its log.jsonl), or pass --create to start a new, empty store there"
    )


def common_options(func: F) -> F:
    """``--data-dir`` and ``--namespace``, on every command that opens a store."""
    return data_dir_option(namespace_option(func))


def make_settings(
    data_dir: Path | None = None, namespace: str | None = None, **more: Any
) -> Settings:
    """Settings from the environment, with the command line's overrides (``None``: not given).

    Raises:
        BadInputError: a setting is invalid (the message names it).
    """
    overrides: dict[str, Any] = {"data_dir": data_dir, "namespace": namespace, **more}
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise BadInputError(
            f"invalid settings: {validation_message(exc, wire_names=False)}"
        ) from exc


@contextmanager
def opened(
    data_dir: Path | None, namespace: str | None, *, read_only: bool = False
) -> Iterator[tuple[MemoryService, str]]:
    """A service on the configured store and the namespace to use; closed afterwards.

    Raises:
        BadInputError: ``read_only`` and a ``data_dir`` that does not exist (a read of a
            missing folder printed an empty store, exit 0: a typo looked like data lost).
    """
    from graphsvc.bootstrap import bootstrap

    settings = make_settings(data_dir, namespace)
    if read_only:
        check_data_dir(settings, data_dir, create=False, read_only=True)
    service = bootstrap(settings, read_only=read_only)
    try:
        yield service, settings.namespace
    finally:
        service.close()


def exit_status(exc: GraphsvcError) -> int:
    """The exit status for a graphsvc error: 2 when the caller can fix the input, else 3."""
    bad = isinstance(exc, BadInputError | NotFoundError | LimitExceededError)
    return BAD_INPUT_EXIT if bad else UNAVAILABLE_EXIT


def fail(exc: GraphsvcError) -> NoReturn:
    """Print a graphsvc error and exit with its status."""
    click.echo(f"error: {exc}", err=True)
    sys.exit(exit_status(exc))


def emit_json(data: Any) -> None:
    """Print JSON for machines (the GraphQL field names), indented."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


__all__ = [
    "BAD_INPUT_EXIT",
    "TEMPORARY_DATA_DIR_HELP",
    "UNAVAILABLE_EXIT",
    "check_data_dir",
    "common_options",
    "create_option",
    "data_dir_flag",
    "data_dir_option",
    "emit_json",
    "exit_status",
    "fail",
    "make_settings",
    "namespace_option",
    "opened",
]
