"""What graphsvc reaches for inside strawberry, graphql-core and uvicorn beyond their public API.

:mod:`graphsvc.api.execution` subclasses strawberry's execution context and overrides
graphql-core's ``complete_object_value``; :mod:`graphsvc.api.cost` and :mod:`graphsvc.api.limits`
read strawberry's ``Schema._schema``; :mod:`graphsvc.api.protocol` subclasses uvicorn's h11 and
httptools protocols. pyproject.toml bounds strawberry-graphql and uvicorn to the tested series
(strawberry bounds graphql-core); these tests name what is gone when an upgrade moves it.
"""

from __future__ import annotations

import asyncio
import inspect
from importlib import import_module
from typing import Any

import pytest
import strawberry
import uvicorn
from graphql import GraphQLSchema

UPGRADE = (
    "graphsvc relies on it (see {user}); pin the dependency below the version that dropped it in "
    "pyproject.toml, or port {user} to the new version"
)


def _upstream(module: str, name: str, user: str) -> Any:
    """``module.name``, or a failure that says what is gone and what to do."""
    try:
        found = getattr(import_module(module), name)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{module}.{name} is gone ({exc}); " + UPGRADE.format(user=user))
    return found


def _missing(owner: object, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if not hasattr(owner, name)]


# -- strawberry and graphql-core (graphsvc/api/execution.py, cost.py, limits.py) -------------------

EXECUTION = "graphsvc/api/execution.py"


def test_strawberrys_execution_context_has_what_the_plain_executor_overrides_and_calls() -> None:
    base = _upstream("strawberry.schema.schema", "StrawberryGraphQLCoreExecutionContext", EXECUTION)
    _upstream("graphql.execution.collect_fields", "FieldDetails", EXECUTION)
    annotated = {name for cls in base.__mro__ for name in getattr(cls, "__annotations__", {})}
    attributes = ("middleware_manager", "schema", "fragment_definitions", "is_awaitable")
    missing = [name for name in attributes if name not in annotated and not hasattr(base, name)]
    missing += _missing(base, ("complete_object_value", "collect_subfields", "is_awaitable"))
    assert not missing, f"{base.__qualname__} lacks {missing}; " + UPGRADE.format(user=EXECUTION)
    signature = list(inspect.signature(base.complete_object_value).parameters)
    expected = [
        "self",
        "return_type",
        "field_details_list",
        "info",
        "path",
        "result",
        "position_context",
    ]
    assert signature == expected, (
        f"complete_object_value now takes {signature}, not {expected}; "
        + UPGRADE.format(user=EXECUTION)
    )


def test_strawberrys_basic_fields_are_recognisable_and_its_schema_holds_graphql_cores() -> None:
    converter = _upstream("strawberry.schema.schema_converter", "GraphQLCoreConverter", EXECUTION)
    backref = getattr(converter, "DEFINITION_BACKREF", None)
    assert isinstance(backref, str), (
        "GraphQLCoreConverter.DEFINITION_BACKREF is gone; " + UPGRADE.format(user=EXECUTION)
    )
    _upstream("strawberry.types.cast", "TYPE_CAST_ATTRIBUTE", EXECUTION)
    field_class = _upstream("strawberry.types.field", "StrawberryField", EXECUTION)
    _upstream("strawberry.schema.schema", "validate_document", "graphsvc/api/limits.py")

    @strawberry.type
    class Query:
        name: str

    schema = strawberry.Schema(query=Query)
    core = getattr(schema, "_schema", None)
    assert isinstance(core, GraphQLSchema), (
        "strawberry.Schema._schema is no longer graphql-core's schema; "
        + UPGRADE.format(user="graphsvc/api/cost.py and graphsvc/api/limits.py")
    )
    assert core.query_type is not None
    field = core.query_type.fields["name"]
    assert getattr(field.resolve, "_is_default", False) is True, (
        "strawberry's resolver of a plain field no longer carries _is_default = True; "
        + UPGRADE.format(user=EXECUTION)
    )
    definition = (field.extensions or {}).get(backref)
    assert isinstance(definition, field_class), (
        f"a field's extensions[{backref!r}] is no longer its StrawberryField; "
        + UPGRADE.format(user=EXECUTION)
    )
    missing = _missing(definition, ("base_resolver", "default_resolver", "python_name"))
    assert not missing, f"StrawberryField lacks {missing}; " + UPGRADE.format(user=EXECUTION)


# -- uvicorn (graphsvc/api/protocol.py) ---------------------------------------------------------

PROTOCOL = "graphsvc/api/protocol.py"
# What the protocols override or call, per uvicorn class.
H11_METHODS = ("connection_made", "connection_lost", "on_response_complete", "send_400_response")
HTTPTOOLS_METHODS = (
    *H11_METHODS,
    "data_received",
    "on_message_begin",
    "on_url",
    "on_header",
    "on_headers_complete",
)
INIT = ["self", "config", "server_state", "app_state", "_loop"]


async def _app(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover - never called
    raise AssertionError


def _protocols() -> list[tuple[str, str, tuple[str, ...]]]:
    found: list[tuple[str, str, tuple[str, ...]]] = [
        ("uvicorn.protocols.http.h11_impl", "H11Protocol", H11_METHODS)
    ]
    try:
        import_module("httptools")
    except ImportError:  # graphsvc then serves with h11 only
        return found
    found.append(("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol", HTTPTOOLS_METHODS))
    return found


@pytest.mark.parametrize(("module", "name", "methods"), _protocols())
def test_uvicorns_protocols_have_what_the_deadline_protocols_use(
    module: str, name: str, methods: tuple[str, ...]
) -> None:
    base = _upstream(module, name, PROTOCOL)
    server_state = _upstream("uvicorn.server", "ServerState", PROTOCOL)
    missing = [method for method in methods if not callable(getattr(base, method, None))]
    assert not missing, f"{name} lacks {missing}; " + UPGRADE.format(user=PROTOCOL)
    init = list(inspect.signature(base.__init__).parameters)
    assert init == INIT, f"{name}() now takes {init}, not {INIT}; " + UPGRADE.format(user=PROTOCOL)
    config = uvicorn.Config(_app, log_config=None, h11_max_incomplete_event_size=1024)
    loop = asyncio.new_event_loop()
    try:
        protocol = base(config, server_state(), {}, loop)
    finally:
        loop.close()
    missing = _missing(protocol, ("transport", "loop", "cycle"))
    assert not missing, f"a {name} lacks {missing}; " + UPGRADE.format(user=PROTOCOL)
    cycle = _upstream(module, "RequestResponseCycle", PROTOCOL)
    assert "self.response_complete" in inspect.getsource(cycle.__init__), (
        f"{module}.RequestResponseCycle no longer sets response_complete; "
        + UPGRADE.format(user=PROTOCOL)
    )


# -- what graphsvc/api/fanout.py and graphsvc/api/view.py read ------------------------------------


def test_strawberrys_info_holds_graphql_cores_and_uvicorn_names_its_stop() -> None:
    info = _upstream("strawberry.types.info", "Info", "graphsvc/api/types.py")
    assert "_raw_info" in getattr(info, "__annotations__", {}), (
        "strawberry's Info no longer holds graphql-core's resolve info as _raw_info; "
        + UPGRADE.format(user="graphsvc/api/types.py (Memory.links)")
    )
    server = _upstream("uvicorn.server", "Server", "graphsvc/api/view.py")
    from graphsvc.api.view import SHUTDOWN_CANCEL

    assert SHUTDOWN_CANCEL in inspect.getsource(server.shutdown), (
        "uvicorn no longer cancels the requests left at shutdown with the message graphsvc "
        "answers them by; " + UPGRADE.format(user="graphsvc/api/view.py (GraphQLView.__call__)")
    )
