"""Invalid Unicode (a lone surrogate, which JSON can escape and Python keeps) is refused as bad
input on every surface's way into the service, on both stores, and nothing is written."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from graphsvc.errors import BadInputError
from graphsvc.model import EraseFilter, LinkInput, MemoryInput
from graphsvc.prompt import PromptInput
from graphsvc.service import MemoryService

LONE = "before \udfff after"


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: MemoryInput(text=LONE), "text"),
        (lambda: MemoryInput(text="fine", tags=("ok", LONE)), "tags"),
        (lambda: MemoryInput(text="fine", source=LONE), "source"),
        (lambda: EraseFilter(tag=LONE), "tag"),
        (lambda: PromptInput(user_turn=LONE), "user_turn"),
    ],
)
def test_input_models_refuse_lone_surrogates(build: object, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build()  # type: ignore[operator]
    # Our validator ("unpaired surrogate"), or pydantic's own for constrained strings.
    message = str(caught.value)
    assert "unpaired surrogate (U+DFFF)" in message or "unicode string" in message
    assert field in message


def test_a_link_note_must_be_valid_unicode() -> None:
    with pytest.raises(ValidationError, match=r"unpaired surrogate|unicode string"):
        LinkInput(
            source="00000000-0000-4000-8000-000000000001",  # type: ignore[arg-type]
            target="00000000-0000-4000-8000-000000000002",  # type: ignore[arg-type]
            kind="CAUSES",  # type: ignore[arg-type]
            note=LONE,
        )


def test_the_service_refuses_invalid_unicode_and_writes_nothing(
    service: MemoryService, ns: str
) -> None:
    service.remember(ns, MemoryInput(text="The backup job failed"))
    with pytest.raises(BadInputError, match=r"query: the text holds an unpaired surrogate"):
        service.bundle(ns, "backup \udfff")
    with pytest.raises(BadInputError, match=r"cue: the text holds an unpaired surrogate"):
        service.reconstruct(ns, "backup \udfff")
    with pytest.raises(BadInputError, match=r"detail: the text holds an unpaired surrogate"):
        service.record_agent_event(ns, "run-1", 0, "served", detail=LONE)
    bad = MemoryInput.model_construct(
        id=None, text=LONE, kind="event", occurred_at=None, tags=(), source=None, confidence=1.0
    )
    with pytest.raises(BadInputError, match="memory text: the text holds an unpaired surrogate"):
        service.remember(ns, bad)
    assert service.stats(ns).memories == 1
    assert service.events(ns, "run-1") == []
