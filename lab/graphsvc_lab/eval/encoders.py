"""``graphsvc eval encoders``: what each installed encoder of the registry costs, on the dev data's
own texts (docs/quality.md, the encoder table).

For every installed model (or those named): one query's encoding time (the p50 and p95 over
``--queries`` LoCoMo questions, each encoded alone, as a bundle encodes its query), how many
memories a second it encodes (``--memories`` LoCoMo turns and as many BEAM messages, through
``embed`` as a write encodes them: in batches, or one text per call for a model that quantises
its activations per call, on ``GRAPHSVC_EMBED_WORKERS`` workers), the model file's size and the
bytes a memory's vector takes. No cache: every text is encoded. Timings depend on the host and
its load; run the models in one process, one after the other, and read them side by side.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from graphsvc.embedding.encoder import OnnxEmbedder
from graphsvc.embedding.install import installed
from graphsvc.embedding.registry import PACKAGED_MODELS, locate
from graphsvc.settings import Settings
from graphsvc_lab.datasets import eval_data_root
from graphsvc_lab.eval.beam import beam_conversations
from graphsvc_lab.eval.locomo import locomo_conversations
from graphsvc_lab.eval.metrics import median, percentile
from graphsvc_lab.eval.qa import Conversation


def _texts(conversations: list[Conversation], count: int) -> list[str]:
    """The first ``count`` memory texts of the conversations, in order."""
    texts = [str(r["text"]) for c in conversations for r in c.rows if r["type"] == "memory"]
    return texts[:count]


@click.command("encoders")
@click.argument("names", nargs=-1)
@click.option("--queries", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--memories", type=click.IntRange(min=1), default=400, show_default=True)
def encoders(names: tuple[str, ...], queries: int, memories: int) -> None:
    """Query latency, encoding rate and bytes of NAMES (default: every installed model)."""
    settings = Settings()
    home = settings.embed_model_home
    chosen = [PACKAGED_MODELS[n] for n in names] or [
        spec for spec in PACKAGED_MODELS.values() if installed(spec, home)
    ]
    root = eval_data_root()
    locomo = locomo_conversations(root / "locomo" / "locomo_dev.json", (), "run")
    beam = beam_conversations(root / "beam" / "100K", (), "run", settings.max_text_chars)
    questions = [q.text for c in locomo for q in c.questions][:queries]
    turns, messages = _texts(locomo, memories), _texts(beam, memories)
    click.echo(
        f"{len(questions)} LoCoMo questions one by one; {len(turns)} LoCoMo turns and "
        f"{len(messages)} BEAM messages as a write encodes them; "
        f"{settings.embed_workers} worker(s), {settings.embed_threads} thread(s) each\n"
    )
    click.echo(
        "| encoder | query ms p50 / p95 | LoCoMo turns/s | BEAM messages/s | one call per text "
        "| model file MB | vector bytes |"
    )
    click.echo("|---|---:|---:|---:|---|---:|---:|")
    for spec in chosen:
        embedder = OnnxEmbedder(
            spec, threads=settings.embed_threads, workers=settings.embed_workers, home=home
        ).load()
        embedder.embed(questions[:2], query=True)  # the session's first runs are slower
        seconds = []
        for question in questions:
            start = time.perf_counter()
            embedder.embed([question], query=True)
            seconds.append((time.perf_counter() - start) * 1000.0)
        rates = []
        for texts in (turns, messages):
            start = time.perf_counter()
            embedder.embed(texts)
            rates.append(len(texts) / (time.perf_counter() - start))
        size = Path(locate(spec, home).model).stat().st_size / 1e6
        click.echo(
            f"| {spec.name} | {median(seconds):.1f} / {percentile(seconds, 95):.1f} "
            f"| {rates[0]:.0f} | {rates[1]:.0f} | {'yes' if spec.alone else 'no'} "
            f"| {size:.0f} | {embedder.dimension} |"
        )
        embedder.close()


__all__ = ["encoders"]
