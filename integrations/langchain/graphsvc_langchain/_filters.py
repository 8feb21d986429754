"""Filters on stored fields, as LangChain and LangGraph write them: ``{"field": value}`` for
equality, a nested mapping for a nested field, or a mapping of operators (``$eq``, ``$ne``,
``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``). graphsvc has no index on these fields,
so the adapters apply filters to what graphsvc returned."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from graphsvc.errors import BadInputError

_MISSING = object()

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
    "$in": lambda value, options: value in options,
    "$nin": lambda value, options: value not in options,
}


def matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """True when ``value`` passes every condition of ``filter``."""
    return all(_holds(value.get(key, _MISSING), condition) for key, condition in filter.items())


def _holds(actual: Any, condition: Any) -> bool:
    operators = (
        isinstance(condition, Mapping) and condition and all(str(k)[:1] == "$" for k in condition)
    )
    if operators:
        return all(_compare(actual, op, operand) for op, operand in condition.items())
    if isinstance(condition, Mapping):
        return isinstance(actual, Mapping) and matches(actual, condition)
    return actual is not _MISSING and bool(actual == condition)


def _is_operator(key: Any) -> bool:
    return isinstance(key, str) and key.startswith("$")


def _compare(actual: Any, op: str, operand: Any) -> bool:
    compare = _COMPARE.get(op)
    if compare is None:
        raise BadInputError(f"unknown filter operator {op!r}: use one of {', '.join(_COMPARE)}")
    if actual is _MISSING:
        return op in ("$ne", "$nin")
    try:
        return bool(compare(actual, operand))
    except TypeError:
        return False
