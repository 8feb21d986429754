"""A Neo4j database whose memory_terms index is made otherwise than graphsvc makes it is refused
when the store opens: the candidate queries trust its namespace field to be one exact token."""

from __future__ import annotations

import pytest

from graphsvc.errors import StoreCorruptError
from graphsvc.store.neo4j.boundary import FULLTEXT_CONFIG, check_fulltext


def test_the_index_the_schema_makes_passes() -> None:
    check_fulltext([dict(FULLTEXT_CONFIG)])


@pytest.mark.parametrize(
    "found",
    [
        [],
        [{**FULLTEXT_CONFIG, "analyzer": "standard-no-stop-words"}],
        [{**FULLTEXT_CONFIG, "properties": ["termText"]}],
        [{**FULLTEXT_CONFIG, "labels": ["Memory", "Belief"]}],
    ],
)
def test_another_index_is_refused_with_what_to_do(found: list[dict[str, object]]) -> None:
    with pytest.raises(StoreCorruptError, match=r"DROP INDEX memory_terms") as raised:
        check_fulltext(found)
    assert ("missing" in str(raised.value)) == (not found)
