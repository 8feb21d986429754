"""A faster completion of plain data objects, inside graphql-core's own executor.

A ``bundle`` answer is one resolver call and then some fifty small objects (capsules, exclusions)
of three to five scalar fields each. graphql-core completes every one of those fields the general
way: a resolve-info object, the argument map, two awaitable checks, a path entry, and the
nullability, list, leaf and object tests, several microseconds a field; with strawberry's checks
on each object (``is_type_of``, and an awaitable test that looks the attribute ``__await__`` up
on a pydantic model, which fails slowly) that was more CPU per request than the HTTP layer.
:class:`PlainExecutor` completes such objects directly.

What counts as plain, per object type and selection (decided from the fields graphql-core itself
collected, so fragments, ``@skip`` and ``@include`` are already applied): every selected field is
``__typename`` or a *basic* strawberry field (no resolver, no extensions, no arguments: strawberry
reads the attribute), with no directives and no ``@defer``/``@stream``, of a scalar, enum, object
or list type (no interface or union) whose objects are plain in turn; and no schema extension
wraps resolvers (a ``resolve`` hook). The decision, a *plan*, is made once per request and
selection, and kept across requests (at most :data:`SHARED_PLANS`) when no directive inside the
selection could make another request collect other fields: the documents are prepared once and
cached (:mod:`graphsvc.api.limits`), so the same nodes come back with every request.

The result is graphql-core's, value for value: each field is read as strawberry reads it (its
default resolver with the field's Python name), checked with the executor's awaitable test and
the type's ``is_type_of``, and coerced with the type's own ``coerce_output_value``. Two checks
are answered without the slow lookup where the answer is known from the class: a pydantic model
whose class defines neither ``__await__`` nor strawberry's cast attribute, does not allow extra
fields and does not override attribute access is not awaitable, and is not a cast object, unless
its instance dictionary holds one of those names (then the checks run as written).

Whenever a value is not ordinary (a null for a non-null field, a coercion that fails or returns
null, something awaitable, a list that is not a ``list`` or ``tuple``, a read that raises) the
object is completed again the general way, which reports the error exactly as it always did: the
fast path only reads attributes and coerces values, so doing that work twice on a rare path
changes nothing. (A read that *makes* a coroutine each time is the one read with an effect: the
coroutine the fast path made is closed, so none is left unawaited.)
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from math import isfinite
from types import CoroutineType, GeneratorType
from typing import Any, NoReturn
from uuid import UUID

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLBoolean,
    GraphQLField,
    GraphQLFloat,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLString,
    InlineFragmentNode,
    SelectionSetNode,
    Undefined,
    is_enum_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
    is_scalar_type,
)
from graphql.execution.collect_fields import FieldDetails
from graphql.pyutils import AwaitableOrValue, Path
from pydantic import BaseModel
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE
from strawberry.types.field import StrawberryField

_Info = GraphQLResolveInfo[Any]
#: Completes one value of a known type, or raises :class:`_NotPlainError`.
_Complete = Callable[[Any, _Info], Any]

_TYPENAME = "__typename"
_AWAIT = "__await__"
#: strawberry's ``is_type_of`` of a type derived from a pydantic model: a cast object's cast,
#: else ``isinstance(obj, (type, model))``; for an object that is not cast, its answer depends on
#: the object's class only.
_PYDANTIC_IS_TYPE_OF = "type.<locals>.wrap.<locals>.is_type_of"

# How a field is completed (the first item of a field's entry in a plan).
_TYPENAME_FIELD = 0
_LEAF = 1  # a scalar or enum, nullable or not
_NESTED = 2  # a list or an object, through its completer

# Values graphql-core's coercion returns unchanged, told from the type without calling it: a str
# for String (serialize_string), a bool for Boolean, a finite float for Float
# (coerce_float_from_number), an int within 32 bits for Int (coerce_int_from_number).
_SAME = 0
_FINITE = 1
_INT32 = 2
#: A value of the type whose coercion is ``str`` itself (strawberry's ``UUID`` scalar): the
#: coerced value is ``str(value)``, which is never null.
_STR_OF = 3
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_UNCHANGED: dict[object, tuple[type, int]] = {
    GraphQLString: (str, _SAME),
    GraphQLBoolean: (bool, _SAME),
    GraphQLFloat: (float, _FINITE),
    GraphQLInt: (int, _INT32),
}

#: One field of a plan: (response name, kind, reader, coerce or completer, the type of a value
#: the coercion returns unchanged and what else it checks (:data:`_UNCHANGED`), non-null).
_Field = tuple[str, int, Any, Any, type | None, int, bool]


class _NotPlainError(Exception):
    """Raised inside the fast path where graphql-core's general completion must answer."""


_CLEAN_CLASSES: dict[type, bool] = {}

#: Plans kept across requests (the documents are cached, so their nodes come back): at most this
#: many, the least recently used dropped first.
SHARED_PLANS = 1024
_SharedKey = tuple[int, int, int, tuple[int, ...]]
# key -> (what the ids in the key stand for, kept alive so that no id is reused; the plan).
_shared: OrderedDict[_SharedKey, tuple[tuple[Any, ...], _ObjectPlan]] = OrderedDict()
_shared_lock = threading.Lock()


def _clean_class(cls: type) -> bool:
    """True for a pydantic model class whose instances answer ``__await__`` and strawberry's
    cast attribute only from their ``__dict__`` (see the module)."""
    known = _CLEAN_CLASSES.get(cls)
    if known is None:
        private = getattr(cls, "__private_attributes__", {})
        known = (
            issubclass(cls, BaseModel)
            and cls.__getattr__ is BaseModel.__getattr__  # type: ignore[attr-defined]
            and cls.__getattribute__ is object.__getattribute__
            and cls.model_config.get("extra") != "allow"
            and not issubclass(cls, CoroutineType | GeneratorType)
            and not hasattr(cls, _AWAIT)
            and not hasattr(cls, TYPE_CAST_ATTRIBUTE)
            and _AWAIT not in private
            and TYPE_CAST_ATTRIBUTE not in private
        )
        _CLEAN_CLASSES[cls] = known
    return known


def _clean(value: Any) -> bool:
    """True for an instance of a :func:`_clean_class` whose ``__dict__`` holds neither name:
    it is not awaitable and not a cast object (the answers graphql-core's checks would give)."""
    cls = type(value)
    clean = _CLEAN_CLASSES.get(cls)
    if clean is None:
        clean = _clean_class(cls)
    if not clean:
        return False
    attributes = value.__dict__
    return _AWAIT not in attributes and TYPE_CAST_ATTRIBUTE not in attributes


def _hand_back(read: Callable[[Any], Any], source: Any, value: Any) -> NoReturn:
    """Give an awaitable read to graphql-core, which reads the field again and awaits what it
    gets. A coroutine made by this read (the next read makes another) is closed, so that none
    is left unawaited; one the source holds is left for graphql-core to await."""
    if isinstance(value, CoroutineType):
        try:
            again = read(source)
        except Exception:  # graphql-core's own read will report it
            again = None
        if again is not value:
            value.close()
            if isinstance(again, CoroutineType):
                again.close()
    raise _NotPlainError


def _reader(field: GraphQLField) -> Callable[[Any], Any] | None:
    """How strawberry reads a basic field (no resolver, no extensions, no arguments) from its
    source object; ``None`` for any other field."""
    resolve = field.resolve
    if resolve is None or getattr(resolve, "_is_default", False) is not True or field.args:
        return None
    definition = (field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if (
        isinstance(definition, StrawberryField)
        and definition.base_resolver is None
        and definition.default_resolver is getattr
    ):
        return operator.attrgetter(definition.python_name)  # what get_result does for it

    def read(source: Any) -> Any:
        return resolve(source, None)  # the basic resolver ignores the resolve info

    return read


class _ObjectPlan:
    """How to complete one object type under one selection."""

    __slots__ = (
        "complete",
        "fields",
        "is_type_of",
        "known_types",
        "pydantic_check",
        "static",
        "type_name",
    )

    def __init__(self, object_type: GraphQLObjectType) -> None:
        self.type_name = object_type.name
        self.is_type_of = object_type.is_type_of
        self.pydantic_check = getattr(self.is_type_of, "__qualname__", "") == _PYDANTIC_IS_TYPE_OF
        #: class -> what is_type_of answered for a clean instance of it (pydantic_check only).
        self.known_types: dict[type, bool] = {}
        self.fields: list[_Field] = []
        self.complete: _Complete | None = None
        #: True when no directive decides what the selection holds (then the plan holds for
        #: every request with this document, whatever its variables).
        self.static = True


def _is_strawberry_is_type_of(object_type: GraphQLObjectType) -> bool:
    """True when the type has no ``is_type_of`` or strawberry's own, which ignores the resolve
    info (the fast path hands it the info of the field where completion started)."""
    check = object_type.is_type_of
    return check is None or str(getattr(check, "__module__", "")).startswith("strawberry.")


class PlainExecutor(StrawberryGraphQLCoreExecutionContext):
    """strawberry's execution context, completing plain objects directly (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        manager = self.middleware_manager
        self._plain_enabled = not (manager is not None and manager.middlewares)
        # (object type, id of the field details list) -> (that list, kept alive; the plan).
        self._plans: dict[tuple[GraphQLObjectType, int], tuple[Any, _ObjectPlan | None]] = {}

    # -- planning ---------------------------------------------------------------------------

    def _plan(
        self, object_type: GraphQLObjectType, field_details_list: list[FieldDetails]
    ) -> _ObjectPlan | None:
        key = (object_type, id(field_details_list))
        found = self._plans.get(key)
        if found is not None:
            return found[1]
        nodes = tuple(detail.node for detail in field_details_list)
        shared_key = (
            id(self.schema),
            id(object_type),
            id(self.is_awaitable),
            tuple(map(id, nodes)),
        )
        with _shared_lock:
            shared = _shared.get(shared_key)
            if shared is not None:
                _shared.move_to_end(shared_key)
        if shared is not None:
            plan: _ObjectPlan | None = shared[1]
        else:
            self._plans[key] = (field_details_list, None)  # a recursive selection is not planned
            plan = self._make_plan(object_type, field_details_list)
            if plan is not None and plan.static:
                kept = (self.schema, object_type, self.is_awaitable, nodes)
                with _shared_lock:
                    _shared[shared_key] = (kept, plan)
                    while len(_shared) > SHARED_PLANS:
                        _shared.popitem(last=False)
        self._plans[key] = (field_details_list, plan)
        return plan

    def _static(self, nodes: Iterable[FieldNode]) -> bool:
        """True when no directive inside the fields' selections (on a field, an inline fragment
        or a fragment spread, the spread fragments followed) can change what is collected."""
        seen: set[str] = set()
        stack: list[SelectionSetNode] = [n.selection_set for n in nodes if n.selection_set]
        while stack:
            for selection in stack.pop().selections:
                if selection.directives:
                    return False
                if isinstance(selection, InlineFragmentNode):
                    stack.append(selection.selection_set)
                elif isinstance(selection, FragmentSpreadNode):
                    name = selection.name.value
                    fragment = self.fragment_definitions.get(name)
                    if name not in seen and isinstance(fragment, FragmentDefinitionNode):
                        seen.add(name)
                        stack.append(fragment.selection_set)
        return True

    def _make_plan(
        self, object_type: GraphQLObjectType, field_details_list: list[FieldDetails]
    ) -> _ObjectPlan | None:
        if not _is_strawberry_is_type_of(object_type):
            return None
        grouped, defer_usages, forbidden = self.collect_subfields(object_type, field_details_list)
        if defer_usages or forbidden:
            return None
        plan = _ObjectPlan(object_type)
        plan.static = self._static(detail.node for detail in field_details_list)
        for response_name, details in grouped.items():
            for detail in details:
                node = detail.node
                if (
                    detail.defer_usage is not None
                    or detail.fragment_variable_values is not None
                    or node.directives
                    or node.arguments
                ):
                    return None
            field_name = details[0].node.name.value
            if field_name == _TYPENAME:
                plan.fields.append((response_name, _TYPENAME_FIELD, None, None, None, _SAME, True))
                continue
            field = object_type.fields.get(field_name)
            reader = None if field is None else _reader(field)
            if field is None or reader is None:
                return None
            entry = self._entry(response_name, reader, field.type, details, plan)
            if entry is None:
                return None
            plan.fields.append(entry)
        plan.complete = self._object_completer(plan)
        return plan

    def _entry(
        self,
        response_name: str,
        reader: Callable[[Any], Any],
        graphql_type: GraphQLOutputType,
        details: list[FieldDetails],
        parent: _ObjectPlan,
    ) -> _Field | None:
        non_null = is_non_null_type(graphql_type)
        inner = graphql_type.of_type if non_null else graphql_type  # type: ignore[union-attr]
        if is_scalar_type(inner) or is_enum_type(inner):
            fast, check = _UNCHANGED.get(inner, (None, _SAME))
            coerce = inner.coerce_output_value
            if fast is None and coerce is str:
                # A UUID is neither awaitable nor an exception (its class defines no
                # ``__await__`` and the check below is on the exact class): graphql-core's
                # completion of it is the coercion, str(value).
                fast, check = UUID, _STR_OF
            return response_name, _LEAF, reader, coerce, fast, check, non_null
        complete = self._completer(graphql_type, details, parent)
        if complete is None:
            return None
        return response_name, _NESTED, reader, complete, None, _SAME, non_null

    def _completer(
        self, graphql_type: GraphQLOutputType, details: list[FieldDetails], parent: _ObjectPlan
    ) -> _Complete | None:
        """A function completing a value of ``graphql_type`` as graphql-core would, raising
        :class:`_NotPlainError` where graphql-core would do anything but return a value;
        ``None`` when the type is not plain."""
        if is_non_null_type(graphql_type):
            assert isinstance(graphql_type, GraphQLNonNull)
            of_type = self._nullable_completer(graphql_type.of_type, details, parent)
            if of_type is None:
                return None

            def non_null(value: Any, info: _Info) -> Any:
                if value is None or value is Undefined:
                    raise _NotPlainError
                completed = of_type(value, info)
                if completed is None:
                    raise _NotPlainError
                return completed

            return non_null
        inner = self._nullable_completer(graphql_type, details, parent)
        if inner is None:
            return None

        def nullable(value: Any, info: _Info) -> Any:
            if value is None or value is Undefined:
                return None
            return inner(value, info)

        return nullable

    def _nullable_completer(
        self, graphql_type: GraphQLOutputType, details: list[FieldDetails], parent: _ObjectPlan
    ) -> _Complete | None:
        if is_list_type(graphql_type):
            assert isinstance(graphql_type, GraphQLList)
            return self._list_completer(graphql_type.of_type, details, parent)
        if is_scalar_type(graphql_type) or is_enum_type(graphql_type):
            coerce = graphql_type.coerce_output_value
            is_awaitable = self.is_awaitable

            def complete_leaf(value: Any, info: _Info) -> Any:
                if isinstance(value, Exception) or is_awaitable(value):
                    raise _NotPlainError
                coerced = coerce(value)
                if coerced is None or coerced is Undefined:
                    raise _NotPlainError
                return coerced

            return complete_leaf
        if is_object_type(graphql_type):
            assert isinstance(graphql_type, GraphQLObjectType)
            plan = self._plan(graphql_type, details)
            if plan is None:
                return None
            parent.static = parent.static and plan.static
            return plan.complete
        return None  # an interface or a union: graphql-core resolves the runtime type

    def _list_completer(
        self, item_type: GraphQLOutputType, details: list[FieldDetails], parent: _ObjectPlan
    ) -> _Complete | None:
        if not is_non_null_type(item_type):
            item = self._completer(item_type, details, parent)
            if item is None:
                return None

            def complete_list(value: Any, info: _Info) -> Any:
                # graphql-core tests each element for awaitability first: the item completers
                # do (a leaf, an object) or cannot meet one (a list is a list or a tuple).
                if type(value) is not list and type(value) is not tuple:
                    raise _NotPlainError
                return [item(element, info) for element in value]

            return complete_list
        assert isinstance(item_type, GraphQLNonNull)
        of_type = self._nullable_completer(item_type.of_type, details, parent)
        if of_type is None:
            return None

        def complete_non_null_items(value: Any, info: _Info) -> Any:
            if type(value) is not list and type(value) is not tuple:
                raise _NotPlainError
            completed = []
            for element in value:
                if element is None or element is Undefined:
                    raise _NotPlainError
                done = of_type(element, info)
                if done is None:
                    raise _NotPlainError
                completed.append(done)
            return completed

        return complete_non_null_items

    def _object_completer(self, plan: _ObjectPlan) -> _Complete:
        is_awaitable = self.is_awaitable
        fields = plan.fields
        type_name = plan.type_name
        is_type_of = plan.is_type_of
        pydantic_check = plan.pydantic_check
        known_types = plan.known_types

        def complete_object(value: Any, info: _Info) -> Any:
            clean = _clean(value)
            if not clean and (isinstance(value, Exception) or is_awaitable(value)):
                raise _NotPlainError
            if is_type_of is not None:
                cls = type(value)
                if clean and pydantic_check:
                    matches = known_types.get(cls)
                    if matches is None:
                        matches = known_types[cls] = is_type_of(value, info) is True
                else:
                    matches = is_type_of(value, info) is True
                if not matches:
                    raise _NotPlainError
            completed: dict[str, Any] = {}
            for response_name, kind, read, complete, fast, check, non_null in fields:
                if kind == _TYPENAME_FIELD:
                    completed[response_name] = type_name
                    continue
                field_value = read(value)
                if kind == _LEAF:
                    number: Any = field_value  # (mypy narrows field_value below)
                    if check == _STR_OF:
                        if type(field_value) is fast:
                            completed[response_name] = str(field_value)
                            continue
                    elif type(field_value) is fast and (
                        check == _SAME
                        or (
                            isfinite(number)
                            if check == _FINITE
                            else _INT32_MIN <= number <= _INT32_MAX
                        )
                    ):
                        completed[response_name] = field_value
                        continue
                    if field_value is None or field_value is Undefined:
                        if non_null:
                            raise _NotPlainError
                        completed[response_name] = None
                        continue
                    if isinstance(field_value, Exception):
                        raise _NotPlainError
                    if is_awaitable(field_value):
                        _hand_back(read, value, field_value)
                    coerced = complete(field_value)
                    if coerced is None or coerced is Undefined:
                        raise _NotPlainError
                    completed[response_name] = coerced
                    continue
                if (
                    type(field_value) is not list
                    and type(field_value) is not tuple
                    and not _clean(field_value)
                    and is_awaitable(field_value)
                ):
                    _hand_back(read, value, field_value)
                completed[response_name] = complete(field_value, info)
            return completed

        return complete_object

    # -- graphql-core's hook ----------------------------------------------------------------

    def complete_object_value(
        self,
        return_type: GraphQLObjectType,
        field_details_list: Any,
        info: _Info,
        path: Path,
        result: Any,
        position_context: Any,
    ) -> AwaitableOrValue[dict[str, Any]]:
        if self._plain_enabled:
            plan = self._plan(return_type, field_details_list)
            if plan is not None and plan.complete is not None:
                try:
                    return plan.complete(result, info)  # type: ignore[no-any-return]
                except Exception:  # completed again the general way, below
                    pass
        return super().complete_object_value(
            return_type, field_details_list, info, path, result, position_context
        )


def plans_kept() -> int:
    """How many plans are kept across requests (at most :data:`SHARED_PLANS`)."""
    with _shared_lock:
        return len(_shared)


__all__ = ["SHARED_PLANS", "PlainExecutor", "plans_kept"]
