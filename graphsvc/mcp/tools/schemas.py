"""The JSON schemas of a tool's arguments and result, as ``tools/list`` offers them.

The descriptions of arguments come from the GraphQL schema (the contract), so the two surfaces
never describe the same field in two ways; results are offered as bare shapes (descriptions of
every nested field would cost a model's context thousands of tokens).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLObjectType,
    GraphQLSchema,
    build_schema,
    get_named_type,
)

from graphsvc.api.schema import schema as graphql_schema
from graphsvc.mcp.tools.answers import hide_memory_fields
from graphsvc.mcp.tools.common import ToolSpec


@functools.cache
def contract() -> GraphQLSchema:
    """The GraphQL schema as graphql-core types, for its descriptions."""
    return build_schema(graphql_schema.as_str())


def _field(root: str, name: str) -> GraphQLField:
    gql = contract()
    parent = gql.get_type(root)
    if not isinstance(parent, GraphQLObjectType) or name not in parent.fields:
        raise KeyError(f"GraphQL has no field {root}.{name}: update the MCP tool table")
    found: GraphQLField = parent.fields[name]
    return found


def _type_fields(name: str) -> dict[str, str]:
    """Descriptions of the fields of a GraphQL object or input type (empty for other names)."""
    found = contract().get_type(name)
    if isinstance(found, GraphQLObjectType | GraphQLInputObjectType):
        return {key: f.description for key, f in found.fields.items() if f.description}
    return {}


def _describe(schema: dict[str, Any], fields: Mapping[str, str]) -> None:
    """Fill the missing descriptions of a JSON schema's properties (and of its $defs, from the
    GraphQL type of the same name; pydantic's own descriptions win), and drop pydantic's
    titles."""
    schema.pop("title", None)  # pydantic's titles repeat the names: tokens for nothing
    for key, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        if key in fields and "description" not in prop:
            prop["description"] = fields[key]
    for name, definition in schema.get("$defs", {}).items():
        if definition.get("type") == "object":
            _describe(definition, _type_fields(name))


def input_schema(spec: ToolSpec[Any]) -> dict[str, Any]:
    """The tool's JSON schema of arguments (camelCase), described by the GraphQL arguments of
    the same operation and, for a flattened ``input`` argument, by the fields of its type."""
    schema: dict[str, Any] = spec.args.model_json_schema(by_alias=True)
    field = _field(*spec.graphql)
    fields = {name: arg.description for name, arg in field.args.items() if arg.description}
    if "input" in field.args:
        fields.pop("input", None)
        fields.update(_type_fields(get_named_type(field.args["input"].type).name))
    _describe(schema, fields)
    _compact(schema)
    return schema


def _compact(node: Any) -> None:
    """Shorten a JSON schema without changing what an agent may send: an optional argument's
    ``anyOf: [X, {"type": "null"}]`` with ``default: null`` becomes ``X`` (leaving it out means
    the same), at every depth."""
    if isinstance(node, dict):
        for prop in node.get("properties", {}).values():
            options = prop.get("anyOf")
            if (
                isinstance(options, list)
                and len(options) == 2
                and {"type": "null"} in options
                and prop.get("default", 0) is None
            ):
                (kept,) = [o for o in options if o != {"type": "null"}]
                del prop["anyOf"], prop["default"]
                prop.update({k: v for k, v in kept.items() if k not in prop})
        for value in node.values():
            _compact(value)
    elif isinstance(node, list):
        for value in node:
            _compact(value)


def output_schema(spec: ToolSpec[Any]) -> dict[str, Any]:
    """The JSON schema of the tool's structured result: its shape, for a client that checks
    it. Its fields are not described here (the tool's description says what an agent reads in
    the result, and GraphQL's schema describes every field): a host may put the listing into a
    model's context, and descriptions of every nested field would cost it thousands of
    tokens."""
    schema: dict[str, Any] = spec.result.model_json_schema(by_alias=True, mode="serialization")
    hide_memory_fields(schema)
    _undescribe(schema)
    return schema


def _undescribe(node: Any) -> None:
    """Drop the titles and descriptions of a JSON schema, at every depth."""
    if isinstance(node, dict):
        for key in ("title", "description"):
            if isinstance(node.get(key), str):  # a property so named is a schema, kept
                node.pop(key)
        for value in node.values():
            _undescribe(value)
    elif isinstance(node, list):
        for value in node:
            _undescribe(value)


__all__ = ["contract", "input_schema", "output_schema"]
