"""One request model per read: every surface takes the fields of BundleQuery and
ReconstructQuery, by construction (GraphQL arguments, MCP arguments, CLI options, the client's
documents), and the models refuse what they can refuse without settings."""

from __future__ import annotations

from datetime import UTC, datetime

import click
import pytest
from graphql import GraphQLObjectType, build_schema

from graphsvc.api.schema import schema
from graphsvc.cli import cli
from graphsvc.client import _operations as ops
from graphsvc.errors import BadInputError
from graphsvc.mcp.tools import TOOLS
from graphsvc.mcp.tools.schemas import input_schema
from graphsvc.model import AsOf, AsOfMode
from graphsvc.requests import BundleQuery, ReadRequest, ReconstructQuery

READS: list[type[ReadRequest]] = [BundleQuery, ReconstructQuery]


def wire_names(model: type[ReadRequest]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def graphql_args(root: str, field: str) -> list[str]:
    parent = build_schema(schema.as_str()).get_type(root)
    assert isinstance(parent, GraphQLObjectType)
    return list(parent.fields[field].args)


def test_every_read_takes_as_of_and_its_mode_last() -> None:
    for model in READS:
        assert wire_names(model)[-2:] == ["asOf", "asOfMode"]


def test_graphql_arguments_are_the_model_fields() -> None:
    bundle = wire_names(BundleQuery)
    assert graphql_args("Query", "bundle") == [*bundle[:-2], "runId", "step", *bundle[-2:]]
    belief = wire_names(ReconstructQuery)
    assert graphql_args("Query", "reconstruct") == belief
    assert graphql_args("Mutation", "reconstruct") == [
        *belief[:-2],
        "runId",
        "step",
        *belief[-2:],
    ]


def test_mcp_tools_take_the_model_fields() -> None:
    expected: dict[str, type[ReadRequest]] = {
        "recall": BundleQuery,
        "bundle": BundleQuery,
        "explain": ReconstructQuery,
        "reconstruct": ReconstructQuery,
    }
    by_name = {spec.name: spec for spec in TOOLS}
    for name, model in expected.items():
        properties = input_schema(by_name[name])["properties"]
        assert set(wire_names(model)) <= set(properties), name
        for wire in wire_names(model):
            assert properties[wire].get("description"), (name, wire)


def test_cli_options_are_the_model_fields() -> None:
    commands: list[tuple[str, type[ReadRequest]]] = [
        ("bundle", BundleQuery),
        ("reconstruct", ReconstructQuery),
    ]
    for command, model in commands:
        found = cli.get_command(click.Context(cli), command)
        assert found is not None
        flags = {opt for param in found.params for opt in param.opts}
        for name in list(model.model_fields)[1:]:
            assert "--" + name.replace("_", "-") in flags, (command, name)
    bundle = cli.get_command(click.Context(cli), "bundle")
    assert bundle is not None
    assert {"--as-of", "--as-of-mode", "--budget"} <= {
        opt for param in bundle.params for opt in param.opts
    }


def test_client_documents_declare_every_field() -> None:
    documents: list[tuple[str, type[ReadRequest]]] = [
        (ops.BUNDLE, BundleQuery),
        (ops.EXPLAIN, ReconstructQuery),
        (ops.RECONSTRUCT, ReconstructQuery),
    ]
    for document, model in documents:
        for wire in wire_names(model):
            assert f"${wire}:" in document and f"{wire}: ${wire}" in document
    at = datetime(2024, 3, 11, tzinfo=UTC)
    request = BundleQuery(query="q", as_of=at, as_of_mode=AsOfMode.KNOWN)
    variables = ops.bundle_op(request, run_id="r", step=2).variables
    assert variables["asOf"] == "2024-03-11T00:00:00Z" and variables["asOfMode"] == "KNOWN"
    assert variables["runId"] == "r" and variables["step"] == 2


def test_models_check_what_needs_no_settings() -> None:
    with pytest.raises(BadInputError, match="asOfMode needs asOf"):
        BundleQuery.of("q", {"as_of_mode": "KNOWN"})
    with pytest.raises(BadInputError, match="asOf: has no time zone"):
        ReconstructQuery.of("q", {"asOf": "2024-03-11T00:00:00"})
    with pytest.raises(BadInputError, match="budgetTokens"):
        BundleQuery.of("q", {"budget_tokens": "many"})
    with pytest.raises(BadInputError, match="budgetTkens"):
        BundleQuery.of("q", {"budgetTkens": 5})
    with pytest.raises(BadInputError, match="either a BundleQuery or options"):
        BundleQuery.of(BundleQuery(query="q"), {"stage": "recent"})
    at = datetime(2024, 3, 11, tzinfo=UTC)
    assert BundleQuery.of("q", {"as_of": at}).when == AsOf(at=at, mode=AsOfMode.VALID)
    assert ReconstructQuery(cue="c").when is None
