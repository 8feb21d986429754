"""What the lab's tests share: the ``graphsvc`` command with graphsvc-lab's commands (eval, bench,
bench-http, convert), as the ``graphsvc.commands`` entry point adds them when the lab is installed
(built here from the lab's table directly, so the lab's tests also run from a checkout on
PYTHONPATH, with no entry points); and the public datasets, or a loud skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphsvc.cli import COMMANDS, LazyGroup
from graphsvc_lab.commands import COMMANDS as LAB_COMMANDS
from graphsvc_lab.datasets import eval_data_root

lab_cli = LazyGroup(name="graphsvc", lazy={**COMMANDS, **LAB_COMMANDS})


def eval_data(*parts: str) -> Path:
    """A file or folder of the public evaluation datasets (``GRAPHSVC_EVAL_DATA``), or a loud skip
    that says what is missing and how to provide it (CI has the data and runs these tests).
    Where the data lives is the lab's knowledge (:func:`graphsvc_lab.datasets.eval_data_root`)."""
    path = eval_data_root().joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"DATASET TEST NOT RUN: {path} is missing. Set GRAPHSVC_EVAL_DATA to the folder of the "
            "public datasets (see the README, section Datasets)"
        )
    return path


__all__ = ["LAB_COMMANDS", "eval_data", "lab_cli"]
