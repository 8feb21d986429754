"""The quality evaluation (``graphsvc eval``): LoCoMo, BEAM and EventStoryLine through the same
ingest and read paths users have, side by side with a bm25s baseline.

The command group is :data:`eval_group`; register it with ``cli.add_command(eval_group)``.
"""

from __future__ import annotations

from graphsvc.eval.cli import eval_group

__all__ = ["eval_group"]
