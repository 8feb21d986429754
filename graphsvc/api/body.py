"""The JSON of a GraphQL request, decoded strictly at the edge.

Strawberry decodes a body with ``json.loads`` and catches only ``JSONDecodeError``: invalid UTF-8,
a body that is not an object (``123``, ``null``), JSON nested past the interpreter's recursion
limit or an integer of 5,000 digits escaped as HTTP 500. Here every such body is refused with a
message that says what is wrong, before GraphQL sees it:

- the bytes must be UTF-8 and the text JSON (no ``NaN``/``Infinity``, floats finite);
- the body must be an object; ``query`` and ``operationName`` strings, ``variables`` and
  ``extensions`` objects (or null);
- at most ``GRAPHSVC_MAX_INPUT_VALUES`` JSON values, nested at most :data:`MAX_JSON_DEPTH` deep
  (graphql-core coerces variables on the event loop, a few microseconds per value);
- every string valid Unicode: JSON may escape a lone surrogate (``"\\udfff"``), which Python
  decodes into a string that cannot be encoded, hashed into an id or stored. The error names the
  field (``variables.input.text``).

Refusals are :class:`~graphsvc.errors.BadInputError` (HTTP 400) or
:class:`~graphsvc.errors.LimitExceededError` (HTTP 413), both GraphQL-shaped with a code.
"""

from __future__ import annotations

import json
from typing import Any

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.files import finite_float, reject_constant
from graphsvc.model import invalid_unicode_at

#: Deepest nesting of lists and objects in a request (the body object is level 1).
MAX_JSON_DEPTH = 64
#: Bodies up to this size are decoded on the event loop; larger ones in a worker thread.
SMALL_BODY_BYTES = 16 * 1024

_SHAPE_HINT = 'send {"query": "...", "variables": {...}, "operationName": "..."}'
_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _kind(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _path(parts: tuple[str | int, ...]) -> str:
    """``variables.input.text``; a key that is not valid Unicode itself shows escaped."""
    text = ".".join(str(part) for part in parts) or "body"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _ProblemFoundError(Exception):
    """A problem seen by the quick pass of :func:`inspect` (which keeps no paths)."""


def _walk(value: Any, max_values: int, root: tuple[str | int, ...], named: bool) -> None:
    """Depth-first over containers, children counted before they are visited (so a huge list is
    refused before it is walked). Without ``named`` no path is kept and a problem raises
    :class:`_ProblemFoundError`; with it the problem is raised as the error the client gets."""
    count = 1
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, len(root) + 1, root)]
    if isinstance(value, str):
        stack = []
        if invalid_unicode_at(value) is not None:
            _text_error(value, root, named)
    while stack:
        item, depth, parts = stack.pop()
        if depth > MAX_JSON_DEPTH:
            if not named:
                raise _ProblemFoundError
            raise LimitExceededError(
                f"{_path(parts)}: the JSON nests deeper than {MAX_JSON_DEPTH} levels: "
                "flatten the input"
            )
        count += len(item)
        if count > max_values:
            raise LimitExceededError(
                f"the request holds more than {max_values} JSON values "
                "(GRAPHSVC_MAX_INPUT_VALUES): split it, e.g. rememberMany in smaller batches"
            )
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            here = (*parts, key) if named else parts
            if isinstance(key, str) and invalid_unicode_at(key) is not None:
                _text_error(key, here, named)
            if isinstance(child, str):
                if invalid_unicode_at(child) is not None:
                    _text_error(child, here, named)
            elif isinstance(child, dict | list):
                stack.append((child, depth + 1, here))


def _text_error(text: str, parts: tuple[str | int, ...], named: bool) -> None:
    if not named:
        raise _ProblemFoundError
    at = invalid_unicode_at(text) or 0
    raise BadInputError(
        f"{_path(parts)}: the text holds an unpaired surrogate (U+{ord(text[at]):04X}) at "
        f"character {at}, which is not valid Unicode: send valid UTF-8 text (in JSON, an escape "
        "\\uD800-\\uDBFF must be followed by one of \\uDC00-\\uDFFF)"
    )


def inspect(value: Any, max_values: int, root: tuple[str | int, ...] = ()) -> None:
    """Check decoded JSON: at most ``max_values`` values, :data:`MAX_JSON_DEPTH` deep, every
    string and key valid Unicode. Iterative (any depth is safe to inspect); a quick pass keeps
    no paths, and only a request with a problem is walked again to name where it is.

    Raises:
        BadInputError: a string or key is not valid Unicode (the message names its path).
        LimitExceededError: too many values, or nested too deeply.
    """
    try:
        _walk(value, max_values, root, named=False)
    except _ProblemFoundError:
        _walk(value, max_values, root, named=True)


def _loads(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_constant=reject_constant, parse_float=finite_float)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"{what} is not valid JSON: {exc}: {_SHAPE_HINT}") from None
    except RecursionError:
        raise LimitExceededError(
            f"{what} nests JSON deeper than {MAX_JSON_DEPTH} levels: flatten the input"
        ) from None
    except ValueError as exc:  # a huge integer, NaN, an overflowing float
        raise BadInputError(f"{what} is not valid JSON: {exc}") from None


def decode_body(raw: bytes | str, max_values: int) -> dict[str, Any]:
    """A GraphQL request body: UTF-8 JSON, an object with the fields GraphQL over HTTP names.

    Raises:
        BadInputError: the body is not UTF-8, not JSON, not an object, a field has the wrong
            type, or a string is not valid Unicode.
        LimitExceededError: too many values, or nested too deeply.
    """
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInputError(
                f"the request body is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                f"{exc.start}): send JSON encoded as UTF-8"
            ) from None
    else:
        text = raw
    value = _loads(text, "the request body")
    if not isinstance(value, dict):
        batch = " (batched operations are not supported: send one per request)"
        raise BadInputError(
            f"the request body is {_kind(value)}, not a JSON object"
            f"{batch if isinstance(value, list) else ''}: {_SHAPE_HINT}"
        )
    inspect(value, max_values)
    for name, allowed, expected in (
        ("query", str, "a string"),
        ("operationName", str, "a string"),
        ("variables", dict, "an object"),
        ("extensions", dict, "an object"),
    ):
        field = value.get(name)
        if field is not None and not isinstance(field, allowed):
            raise BadInputError(f"{name} must be {expected} or null, not {_kind(field)}")
    return value


def decode_parameter(text: str, name: str, max_values: int) -> dict[str, Any] | None:
    """A JSON object passed in the query string (``variables``, ``extensions`` of a GET).

    Raises:
        BadInputError: not JSON, not an object or null, or a string is not valid Unicode.
        LimitExceededError: too many values, or nested too deeply.
    """
    value = _loads(text, f"the {name} parameter")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadInputError(f"the {name} parameter must be a JSON object, not {_kind(value)}")
    inspect(value, max_values, (name,))
    return value


__all__ = ["MAX_JSON_DEPTH", "SMALL_BODY_BYTES", "decode_body", "decode_parameter", "inspect"]
