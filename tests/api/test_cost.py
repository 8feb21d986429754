"""The cost estimate of graphsvc.api.cost: what it counts, and that it stays linear."""

from __future__ import annotations

import time

import pytest
from graphql import parse

from graphsvc.api.cost import COST_CAP, Estimates, links_per_memory, operation_cost
from graphsvc.api.schema import schema

EST = Estimates(
    default_page_size=20,
    max_page_size=100,
    links_per_memory=4,
    default_k=5,
    max_k=50,
    walk_max_nodes=50,
    default_max_capsules=20,
    max_capsules=200,
    ranked_limit=50,
)


def cost(document: str, est: Estimates = EST, **variables: object) -> int:
    return operation_cost(schema._schema, parse(document), None, variables, est).value


def test_lists_count_once_per_expected_item() -> None:
    # memories 1 + nodes (1 + 3 x (links 1 + 4 x kind 1))
    assert cost("{ memories(first: 3) { nodes { links { kind } } } }") == 1 + 1 + 3 * (1 + 4)
    assert cost("query($n: Int) { memories(first: $n) { nodes { id } } }", n=3) == 1 + 1 + 3
    assert cost("{ memories { nodes { id } } }") == 1 + 1 + 20  # the default page
    assert cost("{ memories(first: 10000) { nodes { id } } }") == 1 + 1 + 100  # refused anyway
    few = Estimates(**{**EST.__dict__, "memories": 2})
    assert cost("{ memories(first: 50) { nodes { id } } }", few) == 1 + 1 + 2  # real counts
    nested = "{ memories(first: 3) { nodes { links { targetMemory { links { kind } } } } } }"
    assert cost(nested) == 2 + 3 * (1 + 4 * (1 + 1 + 4))


def test_aliases_fragments_and_introspection() -> None:
    one = "memories(first: 3) { nodes { links { kind } } }"
    assert cost(f"{{ a: {one} b: {one} }}") == 2 * cost(f"{{ {one} }}")
    spread = "{ memories(first: 3) { ...Page } } fragment Page on MemoryConnection { nodes { id } }"
    assert cost(spread) == cost("{ memories(first: 3) { nodes { id } } }")
    assert cost("{ __schema { types { fields { name } } } }") == 1  # the schema is finite
    belief = '{ reconstruct(cue: "x", k: 2) { memories { id } } }'
    assert cost(belief) == 1 + 1 + (2 + 50)
    assert cost('{ bundle(query: "x") { capsules { text } excluded { text } } }') == 1 + (
        1 + 20
    ) + (1 + 50)
    writes = "mutation($i: [MemoryInput!]!) { rememberMany(inputs: $i) { links { kind } } }"
    assert cost(writes, i=[{"text": "a"}] * 7) == 1 + 7 * (1 + 4)


def test_the_estimate_is_linear_in_the_document() -> None:
    # Each fragment spreads the next twice: expanded, 2^40 fields; costed once per fragment.
    levels = 40
    chain = " ".join(
        f"fragment F{i} on Memory {{ links {{ targetMemory {{ ...F{i + 1} ...F{i + 1} }} }} }}"
        for i in range(levels)
    )
    document = (
        f"{{ memories {{ nodes {{ ...F0 }} }} }} {chain} fragment F{levels} on Memory {{ id }}"
    )
    began = time.perf_counter()
    assert cost(document) == COST_CAP
    assert time.perf_counter() - began < 1.0


@pytest.mark.parametrize(
    ("memories", "links", "expected"), [(10, 90, 18), (0, 0, 1), (361, 120, 1), (3, 7, 5)]
)
def test_links_per_memory(memories: int, links: int, expected: int) -> None:
    assert links_per_memory(memories, links) == expected
