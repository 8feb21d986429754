"""The ``graphsvc`` command with graphsvc-lab's commands (eval, bench, bench-http, convert), as the
``graphsvc.commands`` entry point adds them when the lab is installed; built here from the lab's
table directly, so the lab's tests also run from a checkout on PYTHONPATH (no entry points)."""

from __future__ import annotations

from graphsvc.cli import COMMANDS, LazyGroup
from graphsvc_lab.commands import COMMANDS as LAB_COMMANDS

lab_cli = LazyGroup(name="graphsvc", lazy={**COMMANDS, **LAB_COMMANDS})

__all__ = ["LAB_COMMANDS", "lab_cli"]
