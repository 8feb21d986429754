"""The quality evaluation (``graphsvc eval``): LoCoMo, BEAM and EventStoryLine through the same
ingest and read paths users have, side by side with a bm25s baseline.

The command group is ``graphsvc_lab.eval.cli.eval_group`` (``graphsvc`` loads it on first use).
"""
