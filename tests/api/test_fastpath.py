"""The HTTP fast path answers as the general path does.

- :class:`~graphsvc.api.execution.PlainExecutor` against strawberry's own execution context on
  the same schema: the main queries on both stores (fragments, aliases, ``__typename``,
  ``@skip``/``@include``, fields with resolvers beside plain ones), and a small schema whose
  resolvers return every kind of value the fast path must hand back to graphql-core (nulls for
  non-null fields, values that do not coerce, lists that are not lists, reads that raise, objects
  of the wrong type, cast objects, awaitables): same data, same errors, same paths.
- The plans kept across requests: only for selections no directive decides, and bounded.
- The response encoder (orjson) gives the JSON value ``json.dumps`` gave, and falls back to it.
- The media-type reader and the body deadline of :class:`~graphsvc.api.middleware.BodyLimit`.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

import pytest
import strawberry
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from strawberry.experimental import pydantic as from_model
from strawberry.extensions import ParserCache
from strawberry.http.parse_content_type import parse_content_type
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from graphsvc.api import execution
from graphsvc.api.context import Limits
from graphsvc.api.execution import PlainExecutor
from graphsvc.api.lifespan import AppState
from graphsvc.api.middleware import BodyLimit
from graphsvc.api.schema import make_schema, schema
from graphsvc.api.view import GraphQLView, media_type_of
from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.service import MemoryService
from tests.api_support import Outcome, context, run

# -- the main queries, both stores ---------------------------------------------------------------

BUNDLE = """query($q: String!) {
  bundle(query: $q, budgetTokens: 400) {
    query stage budgetTokens usedTokens skipped topScore evidenceCoverage uncoveredTerms
    chronological orderReason rendered
    capsules { memoryId text kind score tokens occurredAt matchedTerms reason }
    excluded { memoryId reason }
  }
}"""
SHAPES = """query($q: String!, $on: Boolean!) {
  __typename
  first: bundle(query: $q) {
    __typename
    used: usedTokens
    capsules { __typename id: memoryId ...Scored }
    capsules { tokens }
    ... on ContextBundle { excluded { memoryId } }
    ...Totals
  }
  second: bundle(query: $q, maxCapsules: 1) {
    capsules @include(if: $on) { memoryId }
    excluded @skip(if: $on) { reason }
    ... on ContextBundle @include(if: $on) { topScore }
    ...Totals @skip(if: $on)
  }
  third: bundle(query: $q) {
    ... on ContextBundle @include(if: $on) { topScore }
    ...Totals @skip(if: $on)
  }
}
fragment Scored on ContextCapsule { score reason }
fragment Totals on ContextBundle { usedTokens skipped }"""
RECONSTRUCT = """query($q: String!) {
  reconstruct(cue: $q, k: 3, depth: 2) {
    cue summary sourceIds linkedContextIds confidence beliefId
    memories { id text kind tags occurredAt recordedAt source confidence
      links { source target kind weight note createdAt } }
  }
}"""
PAGES = """query {
  memories(first: 3) {
    edges { cursor node { id text tags links { kind target } } }
    nodes { __typename id kind }
    pageInfo { hasNextPage endCursor }
  }
  viewer { namespace role keyId }
  stats { memories links }
}"""
TEXTS = [
    "The kettle whistles loudly when the water boils",
    "Descaling the kettle with vinegar removed the limescale",
    "The kettle cable frayed near the plug",
    "We bought a new toaster with a crumb tray",
    "The toaster burns bread on setting five",
    "Caroline went to the support group on Tuesday",
]


def general_schema() -> Any:
    """The same schema, executed by strawberry's own execution context."""
    built = make_schema()
    built.execution_context_class = StrawberryGraphQLCoreExecutionContext
    return built


def seed(service: MemoryService, ns: str) -> None:
    memories = service.remember_many(
        ns,
        [
            MemoryInput(
                text=text,
                kind="event" if i % 2 else "fact",
                tags=("home", f"t{i}"),
                source="test",
                occurred_at=datetime(2024, 1, 1 + i, tzinfo=UTC),
            )
            for i, text in enumerate(TEXTS)
        ],
    )
    ids = [m.id for m in memories]
    service.link_many(
        ns,
        [
            LinkInput(source=ids[0], target=ids[1], kind=LinkKind.CAUSES, note="why"),
            LinkInput(source=ids[1], target=ids[2], kind=LinkKind.PRECEDES),
            LinkInput(source=ids[3], target=ids[4], kind=LinkKind.RELATES_TO, weight=0.5),
        ],
    )


@pytest.mark.parametrize(
    ("document", "variables"),
    [
        (BUNDLE, {"q": "kettle water"}),
        (BUNDLE, {"q": "zzz nothing matches"}),
        (SHAPES, {"q": "kettle toaster", "on": True}),
        (SHAPES, {"q": "kettle toaster", "on": False}),
        (RECONSTRUCT, {"q": "why did the kettle whistle"}),
        (PAGES, None),
        ('{ bundle(query: "kettle", budgetTokens: 0) { usedTokens } }', None),
        ("{ bundle(query: 1) { usedTokens } }", None),
    ],
    ids=[
        "bundle",
        "bundle-empty",
        "shapes-on",
        "shapes-off",
        "reconstruct",
        "pages",
        "bad",
        "invalid",
    ],
)
def test_the_main_queries_answer_as_graphql_core(
    service: MemoryService, ns: str, document: str, variables: dict[str, Any] | None
) -> None:
    seed(service, ns)
    general = general_schema()
    for _ in range(2):  # the second time from the plans kept across requests
        fast = run(context(service, ns), document, variables)
        slow = run(context(service, ns), document, variables, on_schema=general)
        assert fast == slow
    assert fast.data is not None or fast.errors


def test_plain_selections_are_planned_once_and_kept(
    service: MemoryService, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execution, "SHARED_PLANS", 10**6)  # room, whatever ran before
    seed(service, ns)
    built = make_schema()  # its own nodes: plans of other tests do not count
    before = execution.plans_kept()
    first = run(context(service, ns), BUNDLE, {"q": "kettle"}, on_schema=built)
    kept = execution.plans_kept()
    assert kept > before  # ContextBundle, ContextCapsule and ContextExclusion were planned
    again = run(context(service, ns), BUNDLE, {"q": "kettle"}, on_schema=built)
    assert execution.plans_kept() == kept  # the same document reuses them
    assert first == again


# -- what the fast path hands back to graphql-core ----------------------------------------------


class Row(BaseModel):
    """A pydantic model, as graphsvc's domain models are."""

    name: str
    size: int
    ratio: float
    flag: bool
    tags: list[str]


@from_model.type(Row, all_fields=True)
class RowType:
    pass


class Other(BaseModel):
    """A pydantic model with a row's fields that is not a row."""

    name: str
    size: int
    ratio: float
    flag: bool
    tags: list[str]


class Shaky:
    """A plain object whose reads can fail, or make a new value each time."""

    def __init__(self, value: Any) -> None:
        self._value = value

    @property
    def value(self) -> Any:
        if isinstance(self._value, Exception):
            raise self._value
        if callable(self._value):
            return self._value()
        return self._value


@strawberry.type
class ShakyType:
    value: str | None = None


@strawberry.type
class StrictShakyType:
    value: str = ""


async def _later(value: Any) -> Any:
    return value


def _row(**changes: Any) -> Row:
    values: dict[str, Any] = {"name": "a", "size": 1, "ratio": 0.5, "flag": True, "tags": ["x"]}
    values.update(changes)
    return Row.model_construct(**values)  # unvalidated: any value, as a resolver might hold


#: case -> (rows, whether graphql-core answers an error for them)
ODD_ROWS: dict[str, tuple[list[Any], bool]] = {
    "ordinary": ([_row(), _row(name="é ü", size=-(2**31), ratio=1e300, tags=[])], False),
    "null-name": ([_row(name=None)], True),
    "int-past-32-bits": ([_row(size=2**31)], True),
    "float-size": ([_row(size=1.0)], False),  # coerced to 1
    "fractional-size": ([_row(size=1.5)], True),
    "nan-ratio": ([_row(ratio=math.nan)], True),
    "text-ratio": ([_row(ratio="2.5")], False),  # coerced to 2.5
    "int-flag": ([_row(flag=3)], False),  # coerced to true
    "number-name": ([_row(name=7)], False),  # coerced to "7"
    "tags-not-a-list": ([_row(tags="abc")], True),
    "tags-tuple": ([_row(tags=("a", "b"))], False),
    "tags-with-null": ([_row(tags=["a", None])], True),
    "tags-with-numbers": ([_row(tags=[1.5, True])], False),  # coerced to "1.5", "true"
    "not-a-row": ([object()], True),
    "null-row": ([_row(), None], True),  # null in strictRows' list of non-null rows
    "cast-row": ([strawberry.cast(RowType, _row())], False),
    "another-model": ([Other(name="a", size=1, ratio=0.5, flag=True, tags=[])], True),
}


def _odd_schema(rows: Any, shaky: list[Any]) -> tuple[Any, Any]:
    @strawberry.type
    class Query:
        @strawberry.field
        def rows(self) -> list[RowType | None]:
            return rows  # type: ignore[no-any-return]

        @strawberry.field
        def strict_rows(self) -> list[RowType]:
            return rows  # type: ignore[no-any-return]

        @strawberry.field
        def shaky(self) -> list[ShakyType]:
            return [Shaky(v) for v in shaky]  # type: ignore[misc]

        @strawberry.field
        def strict_shaky(self) -> list[StrictShakyType | None]:
            return [Shaky(v) for v in shaky]  # type: ignore[misc]

        @strawberry.field
        async def later(self) -> RowType:
            return _row()  # type: ignore[return-value]

    # ParserCache: the same document nodes for the same text, as graphsvc's prepared documents.
    return (
        strawberry.Schema(
            query=Query, execution_context_class=PlainExecutor, extensions=[ParserCache]
        ),
        strawberry.Schema(query=Query, extensions=[ParserCache]),
    )


ODD_DOCUMENT = """{
  rows { name size ratio flag tags __typename }
  strictRows { name n: name tags }
  later { name }
}"""
SHAKY_DOCUMENT = "{ shaky { value } strictShaky { value } }"


def _outcome(result: Any) -> Outcome:
    errors = sorted((e.formatted for e in result.errors or []), key=json.dumps)
    payload = json.loads(json.dumps({"data": result.data, "errors": errors}, default=str))
    return Outcome(payload["data"], payload["errors"])


@pytest.mark.parametrize("case", sorted(ODD_ROWS))
def test_values_out_of_the_ordinary_get_graphql_cores_answer(case: str) -> None:
    rows, fails = ODD_ROWS[case]
    fast, general = _odd_schema(rows, [])
    answered = _outcome(asyncio.run(fast.execute(ODD_DOCUMENT)))
    assert answered == _outcome(asyncio.run(general.execute(ODD_DOCUMENT)))
    assert bool(answered.errors) == fails, answered
    if case == "ordinary":
        assert answered.data is not None
        assert answered.data["rows"][1]["name"] == "é ü"


@pytest.mark.parametrize(
    "values",
    [
        lambda: ["a", None],
        lambda: [ValueError("the read failed")],
        lambda: [b"bytes", uuid.UUID(int=7)],
        lambda: [lambda: _later("late")],  # a new coroutine each read: none left unawaited
    ],
    ids=["null", "raises", "not-text", "made-awaitable"],
)
def test_reads_out_of_the_ordinary_get_graphql_cores_answer(values: Any) -> None:
    fast, _ = _odd_schema([], values())
    _, general = _odd_schema([], values())
    answered = _outcome(asyncio.run(fast.execute(SHAKY_DOCUMENT)))
    assert answered == _outcome(asyncio.run(general.execute(SHAKY_DOCUMENT)))
    assert answered.data is not None or answered.errors


def _held_schema(executor: type[Any]) -> Any:
    held = Shaky(_later("late"))

    @strawberry.type
    class Query:
        @strawberry.field
        def shaky(self) -> ShakyType:
            return held  # type: ignore[return-value]

    return strawberry.Schema(query=Query, execution_context_class=executor)


def test_a_held_awaitable_is_awaited_by_graphql_core() -> None:
    answers = []
    for executor in (PlainExecutor, StrawberryGraphQLCoreExecutionContext):
        # Read twice on the fast path's way (it, then graphql-core): awaited once.
        built = _held_schema(executor)
        answers.append(_outcome(asyncio.run(built.execute("{ shaky { value } }"))))
    assert answers[0] == answers[1]
    assert answers[0].data == {"shaky": {"value": "late"}}


def test_a_directive_on_a_fragment_is_decided_per_request() -> None:
    fast, general = _odd_schema([_row()], [])
    document = """query($on: Boolean!) {
      rows { ... on RowType @include(if: $on) { name } ...Sized @skip(if: $on) }
    }
    fragment Sized on RowType { size }"""
    for on in (True, False, True):
        variables = {"on": on}
        answered = _outcome(asyncio.run(fast.execute(document, variable_values=variables)))
        assert answered == _outcome(
            asyncio.run(general.execute(document, variable_values=variables))
        )
        expected = {"name": "a"} if on else {"size": 1}
        assert answered.data == {"rows": [expected]}


def test_the_plans_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execution, "SHARED_PLANS", 5)
    fast, _ = _odd_schema([_row()], [])
    for i in range(12):
        answered = _outcome(asyncio.run(fast.execute(f"{{ rows {{ name n{i}: size }} }}")))
        assert answered.data == {"rows": [{"name": "a", f"n{i}": 1}]}
        assert execution.plans_kept() <= 5


# -- the response body ----------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


def _view() -> GraphQLView:
    return GraphQLView(
        schema,
        AppState(limits=Limits.defaults()),
        graphiql=False,
        max_input_values=100,
        request_timeout=None,
    )


@settings(max_examples=300, deadline=None, database=None)
@given(value=JSON_VALUES)
def test_responses_hold_the_json_json_dumps_gave(value: Any) -> None:
    encoded = _view().encode_json({"data": value})
    assert isinstance(encoded, bytes)
    assert json.loads(encoded) == json.loads(json.dumps({"data": value}))


def test_what_orjson_cannot_encode_is_encoded_as_before() -> None:
    view = _view()
    for value in ({"n": 2**70}, {"t": "a\udfffb"}, {1: "key"}):
        assert view.encode_json(value) == json.dumps(value, separators=(",", ":")).encode()
    with pytest.raises(TypeError):  # json.dumps refuses a datetime: so does the fast encoder
        view.encode_json({"at": datetime(2024, 1, 1, tzinfo=UTC)})
    assert view.encode_json({"t": "é"}) == '{"t":"é"}'.encode()


@pytest.mark.parametrize(
    "header",
    [
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "",
        "text/plain",
        "multipart/form-data; boundary=x",
        ";;;",
        "application/json; =",
        "\x00",
    ],
)
def test_media_types_are_read_as_strawberry_reads_them(header: str) -> None:
    try:
        expected = parse_content_type(header)[0]
    except Exception:  # the email parser's failures are "" to the view
        expected = ""
    assert media_type_of(header) == expected
    assert media_type_of(header) == expected  # from the cache


# -- the body deadline ----------------------------------------------------------------------------


async def _through_body_limit(
    receive_delay: float, timeout: float, cancel_after: float | None = None
) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(receive_delay)
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    limited = BodyLimit(app, max_bytes=100, timeout=timeout)
    scope = {"type": "http", "method": "POST", "path": "/graphql", "headers": []}
    call = asyncio.ensure_future(limited(scope, receive, send))
    if cancel_after is not None:
        await asyncio.sleep(cancel_after)
        call.cancel()
    await call
    return sent


def test_a_body_that_arrives_in_time_is_read() -> None:
    sent = asyncio.run(_through_body_limit(0.01, timeout=2.0))
    assert sent[0]["status"] == 200


def test_a_body_that_does_not_arrive_in_time_is_408() -> None:
    sent = asyncio.run(_through_body_limit(5.0, timeout=0.1))
    assert sent[0]["status"] == 408
    assert (b"connection", b"close") in sent[0]["headers"]
    body = json.loads(sent[1]["body"])
    assert body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert "GRAPHSVC_BODY_TIMEOUT" in body["errors"][0]["message"]


def test_a_request_cancelled_while_its_body_arrives_is_not_a_408() -> None:
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_through_body_limit(5.0, timeout=2.0, cancel_after=0.05))
