"""examples/langgraph_memory.py runs as a user runs it, against a real server, with no network but
the loopback: the second thread recalls what the first one stored, and the bundle is shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.langchain.conftest import Tenant, python_env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_memory.py"
FACT = "I drink green tea every morning and no coffee after noon."


def test_the_agent_remembers_across_threads(mirror_tenants: dict[str, Tenant]) -> None:
    tenant = mirror_tenants["example"]
    tenant.empty()
    command = [sys.executable, str(EXAMPLE), "--url", tenant.url, "--api-key", tenant.key]
    done = subprocess.run(
        command, capture_output=True, text=True, env=python_env(), timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    second = done.stdout.split("== thread 2", 1)[1]
    recalled = second.split("recalled from graphsvc:\n", 1)[1].split("agent:", 1)[0]
    assert recalled.strip() == f"- {FACT}"
    prompt = second.split("== the system prompt the model got in thread 2\n", 1)[1]
    assert f"- {FACT}" in prompt.split("==", 1)[0]
    bundle = second.split("== graphsvc's bundle", 1)[1]
    assert FACT in bundle and "uncoveredWords" in bundle
