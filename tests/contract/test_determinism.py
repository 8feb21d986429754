"""Same data, same request, same bytes (docs/design.md, read semantics 11).

Two separate Python processes (different hash seeds, the real clock, their own data directories)
ingest the same input and print bundles and beliefs as JSON; the outputs must be byte-identical.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

RUNNER = textwrap.dedent(
    """
    import json
    import sys
    from datetime import UTC, datetime, timedelta
    from pathlib import Path

    from graphsvc.model import LinkInput, LinkKind, MemoryInput
    from graphsvc.service import MemoryService
    from graphsvc.settings import Settings
    from graphsvc.store.mirror import MirrorStore

    data_dir = Path(sys.argv[1])
    store = MirrorStore(data_dir, fsync=False)
    store.open()
    service = MemoryService(store, Settings(data_dir=data_dir, fsync=False))  # the real clock
    ns = "det"
    start = datetime(2024, 1, 1, 9, 30, tzinfo=UTC)

    SUBJECTS = ["kettle", "boiler", "router", "printer", "garage door", "dishwasher"]
    EVENTS = ["was installed", "started leaking", "was repaired by Sam", "broke again",
              "was replaced under warranty"]

    # Dozens of memories: one by one and in batches, with dates, some on the same day, and
    # near-duplicates, so that ties in score, date and text are exercised.
    memories = {}
    for s, subject in enumerate(SUBJECTS):
        items = [
            MemoryInput(
                text=f"The {subject} {event}.",
                kind="event",
                occurred_at=start + timedelta(days=40 * e + 3 * s),
                tags=(subject.replace(" ", "-"),),
                confidence=1.0 - 0.1 * (e % 3),
            )
            for e, event in enumerate(EVENTS)
        ]
        if s % 2:
            written = service.remember_many(ns, items)
        else:
            written = [service.remember(ns, item) for item in items]
        for e, memory in enumerate(written):
            memories[(subject, e)] = memory
    for i, text in enumerate([
        "Sam is the handyman we call for plumbing.",
        "Sam is the handyman we call for plumbing!",
        "The warranty for appliances lasts two years.",
        "Leaks are usually caused by worn gaskets.",
        "The kettle and the boiler share one circuit breaker.",
        "Order of repairs: boiler first, kettle last.",
    ]):
        memories[("misc", i)] = service.remember(
            ns, MemoryInput(text=text, occurred_at=start + timedelta(days=7 * i))
        )

    links = []
    for subject in SUBJECTS:
        for e in range(len(EVENTS) - 1):
            links.append((memories[(subject, e)], memories[(subject, e + 1)], LinkKind.PRECEDES))
        links.append((memories[(subject, 1)], memories[(subject, 2)], LinkKind.CAUSES))
        links.append((memories[(subject, 3)], memories[(subject, 4)], LinkKind.CAUSES))
        links.append((memories[(subject, 4)], memories[(subject, 0)], LinkKind.SUPERSEDES))
        links.append((memories[(subject, 2)], memories[("misc", 0)], LinkKind.RELATES_TO))
    links.append((memories[("misc", 3)], memories[("kettle", 1)], LinkKind.CAUSES))
    links.append((memories[("misc", 4)], memories[("boiler", 3)], LinkKind.CAUSES))
    service.link_many(
        ns, [LinkInput(source=a.id, target=b.id, kind=k, weight=1.5) for a, b, k in links]
    )
    doomed = service.remember(ns, MemoryInput(text="A temporary memory about the kettle."))
    service.forget(ns, doomed.id)

    out = {"bundles": [], "beliefs": []}
    for query in [
        "What happened to the kettle?",
        "When did the boiler start leaking, and what came after?",
        "Who repairs things? Sam plumbing handyman",
        "warranty replaced broke",
        "timeline of the router",
        "dishwasher printer garage",
        "quantum entanglement",
    ]:
        for budget in (12, 40, 400):
            for stage in ("default", "recent", "exact"):
                bundle = service.bundle(ns, query, budget_tokens=budget, stage=stage)
                out["bundles"].append(bundle.to_json_dict())
        for floor in (0.3, 0.9):
            bundle = service.bundle(ns, query, max_capsules=2, min_score=floor)
            out["bundles"].append(bundle.to_json_dict())
    for cue in ["kettle leaking", "boiler broke", "Sam handyman", "gaskets leak", "nothing here"]:
        for k, depth in ((1, 0), (3, 1), (5, 2), (10, 4)):
            belief = service.reconstruct(ns, cue, k=k, depth=depth).to_json_dict()
            for memory in belief["memories"]:
                # recordedAt is when each process wrote the memory: data, not a result.
                memory.pop("recordedAt")
            out["beliefs"].append(belief)
    store.close()
    sys.stdout.write(json.dumps(out, sort_keys=True, ensure_ascii=False))
    """
)


def _run(script: Path, data_dir: Path, hash_seed: str) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, str(script), str(data_dir)],
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


@pytest.mark.slow
def test_two_processes_give_byte_identical_bundles_and_beliefs(tmp_path: Path) -> None:
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    first = _run(script, tmp_path / "one", hash_seed="1")
    second = _run(script, tmp_path / "two", hash_seed="4242")
    assert first == second

    out = json.loads(first)
    bundles, beliefs = out["bundles"], out["beliefs"]
    assert len(bundles) == 7 * (9 + 2)
    assert len(beliefs) == 5 * 4
    # The run was not trivially empty: it packed, excluded, abstained and walked.
    assert sum(len(b["capsules"]) for b in bundles) > 100
    reasons = {c["reason"] for b in bundles for c in b["excluded"]}
    assert {"budget", "duplicate", "abstained", "below_floor"} <= reasons
    assert any(b["chronological"] for b in bundles)
    assert any(b["skipped"] for b in bundles)
    assert any(b["linkedContextIds"] for b in beliefs)
    assert any("Causal chains" in b["summary"] for b in beliefs)
    # Bundles never carry recordedAt, so they cannot depend on when each process wrote.
    assert b"recordedAt" not in json.dumps(bundles).encode()
