"""Command-line options made from the request models of :mod:`graphsvc.requests`.

A read command (``bundle``, ``reconstruct``) takes its first field (the query, the cue) as its
argument and every other field as an option (``budget_tokens`` -> ``--budget-tokens``, ``as_of``
-> ``--as-of``), with the field's description as its help; :func:`request_of` builds the model
from what was given. So a field added to a read's model is an option here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

import click
from pydantic.fields import FieldInfo

from graphsvc.requests import ReadRequest, base_type

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R", bound=ReadRequest)

#: Older spellings of some options, still accepted (``--budget`` came before ``--budget-tokens``).
ALIASES: Mapping[str, Sequence[str]] = {"budget_tokens": ("--budget",)}


def _click_type(field: FieldInfo) -> Any:
    """The click type of a field: an enum is a choice of its values (any case); a time is read
    as text and parsed by the model, which says what it expects."""
    kind = base_type(field)
    if issubclass(kind, StrEnum):
        return click.Choice([member.value for member in kind], case_sensitive=False)
    if kind is datetime:
        return str
    return kind


def _help(name: str, field: FieldInfo) -> str:
    text = field.description or name
    if base_type(field) is datetime:
        text += " ISO 8601 with a zone: 2024-03-11T00:00:00Z."
    return text


def request_options(model: type[ReadRequest]) -> Callable[[F], F]:
    """The options of every field of ``model`` but the first (the command's argument)."""
    names = list(model.model_fields)[1:]

    def decorate(fn: F) -> F:
        for name in reversed(names):  # click applies the last decorator first
            field = model.model_fields[name]
            flag = "--" + name.replace("_", "-")
            fn = click.option(
                flag,
                *ALIASES.get(name, ()),
                name,
                type=_click_type(field),
                default=None,
                help=_help(name, field),
            )(fn)
        return fn

    return decorate


def request_of(model: type[R], first: str, options: dict[str, Any]) -> R:
    """The request of a command: its argument, and the options of :func:`request_options`
    that were given (taken out of ``options``).

    Raises:
        BadInputError: a field the model refuses (named as GraphQL names it: ``asOf``).
    """
    given = {}
    for name in list(model.model_fields)[1:]:
        value = options.pop(name, None)
        if value is not None:
            given[name] = value
    return model.of(first, given)


__all__ = ["ALIASES", "request_of", "request_options"]
