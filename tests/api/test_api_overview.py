"""The ``overview`` query over GraphQL, on both stores: a read key may ask it, its bounds are
refused with the range, and its answer is the service-level overview's."""

from __future__ import annotations

from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.overview import overview
from graphsvc.service import MemoryService
from tests.api_support import context, run

QUERY = """query ($top: Int!, $days: Int!) {
  overview(top: $top, days: $days) {
    namespace memories
    kinds { distinct top { value count } }
    tags { distinct top { value count } }
    sources { distinct top { value count } }
    days { distinct top { value count } }
    components { seedId seedText size links complete memberIds }
    componentsNote
  }
}"""


def test_a_read_key_sees_the_overview(service: MemoryService, ns: str) -> None:
    a, b, c = service.remember_many(
        ns,
        [
            MemoryInput(text="the storm came", kind="event", tags=("weather",), source="log"),
            MemoryInput(text="the roof leaked", kind="event", tags=("home",), source="log"),
            MemoryInput(text="we fixed the roof", kind="decision", tags=("home",)),
        ],
    )
    service.link_many(
        ns,
        [
            LinkInput(source=a.id, target=b.id, kind=LinkKind.CAUSES),
            LinkInput(source=b.id, target=c.id, kind=LinkKind.PRECEDES),
        ],
    )
    data = run(context(service, ns, role="read"), QUERY, {"top": 5, "days": 7}).ok()
    expected = overview(service.store, ns, top=5, days=7).model_dump(mode="json", by_alias=True)
    assert data["overview"] == expected
    assert data["overview"]["kinds"]["top"] == [
        {"value": "event", "count": 2},
        {"value": "decision", "count": 1},
    ]
    assert [(c["size"], c["links"]) for c in data["overview"]["components"]] == [(3, 2)]


def test_bounds_are_refused(service: MemoryService, ns: str) -> None:
    outcome = run(context(service, ns, role="read"), QUERY, {"top": 50, "days": 7})
    assert outcome.messages == ["top must be between 1 and 20, got 50"]
