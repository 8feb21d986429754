"""``graphsvc convert``: public dataset files as graphsvc ingest JSON Lines.

The file is read strictly (:mod:`graphsvc.files`: UTF-8, JSON without NaN, infinity, numbers of
thousands of digits, unpaired surrogates or deep nesting) and converted whole before anything is
printed, so a file that is not what it should be prints nothing but one line saying where and
why, and exits 2 (never a traceback, never half a conversion).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import click

from graphsvc import files
from graphsvc.errors import BadInputError
from graphsvc_lab.datasets import esc_rows, locomo_rows
from graphsvc_lab.eval.beam import beam_rows

#: Exit status of a file that cannot be converted (as ``graphsvc ingest`` refuses a bad file).
BAD_INPUT_EXIT = 2
#: What each dataset's file is, for messages.
NAMES = {
    "locomo": "LoCoMo file (a JSON list of conversations)",
    "esc": "EventStoryLine file (JSON Lines, one document a line)",
    "beam": "BEAM chat.json (a JSON list of batches)",
}
#: What a converter raises when an item lacks a field or has one of the wrong type.
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


class ConvertError(click.ClickException):
    """A file that cannot be converted: one line on stderr, exit 2."""

    exit_code = BAD_INPUT_EXIT

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


def _shape(error: Exception) -> str:
    """What a converter's error says of the item, in a few words."""
    if isinstance(error, KeyError):
        return f"no field {error.args[0]!r}" if error.args else "a field is missing"
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"{text[:160]}"


def _objects(value: Any, where: str, what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise BadInputError(f"{where}: expected {what}, found {files.kind_of(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadInputError(
                f"{where}: item {index} of the list is {files.kind_of(item)}, not an object"
            )
    return value


def _converted(
    items: list[tuple[str, Callable[[], Iterator[dict[str, Any]]]]], where: str, name: str
) -> list[dict[str, Any]]:
    """Every row of every item, or the first item's shape error as one line."""
    if not items:
        raise BadInputError(f"{where}: nothing to convert: not a {name}, or empty")
    rows: list[dict[str, Any]] = []
    for label, make in items:
        try:
            rows.extend(make())
        except SHAPE_ERRORS as exc:
            raise BadInputError(f"{where}: {label}: not a {name}: {_shape(exc)}") from None
    return rows


def convert_file(dataset: str, path: Path, only: str | None, scope: str) -> list[dict[str, Any]]:
    """The ingest rows of a dataset file, all of them (nothing when the file is bad).

    Raises:
        BadInputError: the file cannot be read, is not UTF-8 JSON of the dataset's shape; the
            message is one line naming the file and the item.
    """
    where = str(path)
    raw = files.read_bytes(path, "the dataset file")
    name = NAMES[dataset]
    if dataset == "esc":
        documents = []
        for number, value in files.load_json_lines(raw, where):
            if not isinstance(value, dict):
                raise BadInputError(
                    f"{where}:{number}: expected a JSON object (one document), found "
                    f"{files.kind_of(value)}"
                )
            documents.append((number, value))
        return _converted(
            [
                (f"line {number}", functools.partial(esc_rows, document, scope))
                for number, document in documents
                if only is None or only == str(document.get("doc"))
            ],
            where,
            name,
        )
    data = files.load_json(files.decode_utf8(raw, where), where)
    if dataset == "locomo":
        conversations = _objects(data, where, "a JSON list of conversations")
        return _converted(
            [
                (
                    f"conversation {index}",
                    functools.partial(
                        locomo_rows, conversation, str(conversation.get("sample_id", index)), scope
                    ),
                )
                for index, conversation in enumerate(conversations)
                if only is None or only == str(index)
            ],
            where,
            name,
        )
    batches = _objects(data, where, "a JSON list of batches")
    chat = path.resolve().parent.name
    make = functools.partial(beam_rows, batches, chat, scope)
    return _converted([("the chat", make)], where, name)


def _fail(message: str) -> NoReturn:
    raise ConvertError(message)


@click.command("convert")
@click.argument("dataset", type=click.Choice(sorted(NAMES)))
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--only", default=None, help="Only this LoCoMo sample index (0-based) or ESC doc.")
@click.option(
    "--scope",
    default="",
    help="Salt for the memory ids, to load the same data twice (ids are unique across namespaces).",
)
def convert(dataset: str, path: Path, only: str | None, scope: str) -> None:
    """Print a public dataset file (LoCoMo JSON, EventStoryLine JSONL, a BEAM chat.json) as
    ingest JSON Lines.

    A BEAM chat's id is its folder's name (beam/100K/<id>/chat.json). A file that is not what
    the dataset's files are prints one line saying where and why, and exits 2.
    """
    try:
        rows = convert_file(dataset, path, only, scope)
    except BadInputError as exc:
        _fail(str(exc))
    for row in rows:
        click.echo(json.dumps(row, ensure_ascii=False))


__all__ = ["ConvertError", "convert", "convert_file"]
