"""The files a user names (an API keys file, a dataset to convert), read strictly: UTF-8 text,
JSON with no NaN, no infinity, no number of thousands of digits, no unpaired surrogate and no
nesting deeper than :data:`MAX_DEPTH`, and TOML likewise bounded. Whatever is wrong is a
:class:`~graphsvc.errors.BadInputError` of one line naming the file and where, never a
traceback (a ``RecursionError`` from a deeply nested file crashed ``graphsvc serve``).

Standard library only (and :mod:`graphsvc.errors`), like :mod:`graphsvc.api.auth`, which reads
the keys file with it.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graphsvc.errors import BadInputError

#: Deepest nesting of arrays and objects (tables) a file may have; the files graphsvc reads
#: need a handful of levels.
MAX_DEPTH = 64


def read_bytes(path: Path, what: str) -> bytes:
    """The bytes of ``path``.

    Raises:
        BadInputError: it cannot be read (missing, a folder, no permission).
    """
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadInputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def decode_utf8(raw: bytes, where: str) -> str:
    """``raw`` as UTF-8 text (a leading byte order mark dropped).

    Raises:
        BadInputError: not UTF-8 (the message names the first bad byte, or says UTF-16).
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            found = "it is UTF-16 (it starts with a UTF-16 byte order mark)"
        else:
            found = f"byte 0x{raw[exc.start]:02x} at offset {exc.start} is not UTF-8"
        raise BadInputError(
            f"{where}: not UTF-8 text: {found}; convert it to UTF-8 (iconv -t UTF-8)"
        ) from None


def reject_constant(name: str) -> Any:
    """``parse_constant`` of :func:`json.loads`: NaN and infinities are not JSON.

    Raises:
        ValueError: always.
    """
    raise ValueError(f"{name} is not JSON: send numbers as finite decimals")


def finite_float(text: str) -> float:
    """``parse_float`` of :func:`json.loads`: a number a float can hold.

    Raises:
        ValueError: it overflows a float (``1e999``).
    """
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is too large for a float")
    return number


def check_value(value: Any, where: str) -> None:
    """Check parsed JSON or TOML iteratively (any depth is safe to check): at most
    :data:`MAX_DEPTH` levels, and every string and key valid Unicode (no unpaired surrogate,
    which JSON's ``\\ud800`` escapes can make and no UTF-8 output can hold).

    Raises:
        BadInputError: the first problem, with its path.
    """
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict | list) and depth >= MAX_DEPTH:
            raise BadInputError(
                f"{where}: arrays or objects nested deeper than {MAX_DEPTH} levels (at "
                f"{path or 'the top'}): not a file of this kind"
            )
        pairs = (
            item.items()
            if isinstance(item, dict)
            else enumerate(item)
            if isinstance(item, list)
            else ()
        )
        for key, child in pairs:
            here = f"{path}[{key!r}]" if isinstance(key, str) else f"{path}[{key}]"
            for text in (key, child):
                if isinstance(text, str):
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError as exc:
                        raise BadInputError(
                            f"{where}: {here or 'a value'} holds an unpaired surrogate "
                            f"(U+{ord(text[exc.start]):04X}), which is not valid Unicode"
                        ) from None
            if isinstance(child, dict | list):
                stack.append((child, depth + 1, here))


def load_json(text: str, where: str) -> Any:
    """One JSON value, strictly (see the module).

    Raises:
        BadInputError: not JSON, NaN or infinity, a number too long, nested too deeply, or an
            unpaired surrogate; the message is one line naming ``where``.
    """
    try:
        value = json.loads(text, parse_constant=reject_constant, parse_float=finite_float)
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"{where}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise BadInputError(
            f"{where}: not JSON that can be read: arrays or objects nested too deeply"
        ) from None
    except ValueError as exc:  # NaN, infinity, a number of thousands of digits
        raise BadInputError(f"{where}: not JSON: {str(exc).partition(';')[0]}") from None
    check_value(value, where)
    return value


def load_json_lines(raw: bytes, where: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of JSON Lines as ``(line number, value)``, each line read as
    :func:`load_json` reads a file (``where:line`` in the messages).

    Raises:
        BadInputError: the first bad line.
    """
    for number, line in enumerate(raw.split(b"\n"), start=1):
        here = f"{where}:{number}"
        text = decode_utf8(line, here)
        if text.strip():
            yield number, load_json(text, here)


def load_toml(text: str, where: str) -> dict[str, Any]:
    """A TOML document, with nesting bounded as for JSON.

    Raises:
        BadInputError: not TOML, nested too deeply, or an unpaired surrogate.
    """
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInputError(f"{where}: not TOML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise BadInputError(
            f"{where}: not TOML that can be read: arrays or tables nested too deeply"
        ) from None
    check_value(value, where)
    return value


def kind_of(value: Any) -> str:
    """What a JSON value is, for messages ("a list", "a string", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a number"


__all__ = [
    "MAX_DEPTH",
    "check_value",
    "decode_utf8",
    "finite_float",
    "kind_of",
    "load_json",
    "load_json_lines",
    "load_toml",
    "read_bytes",
    "reject_constant",
]
