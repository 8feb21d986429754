"""``graphsvc eval unrelated``: an encoder's typical cosine between a question and a memory about
something else, the registry's ``unrelated_cosine`` (docs/quality.md).

For each dataset (LoCoMo, BEAM), ``--pairs`` questions and as many memories are drawn at random
(a fixed seed), and the cosine of every question with every memory is computed as the stores
compute it (int8 codes, exact cosines). Nearly every such pair is unrelated; the median over them
is the dataset's figure, and the registry's value is the mean of the datasets' medians.
"""

from __future__ import annotations

import random
from pathlib import Path

import click
import numpy as np

from graphsvc.embedding.codes import cosines, quantize, squared_norms
from graphsvc.settings import Settings
from graphsvc_lab.datasets import eval_data_root
from graphsvc_lab.eval.beam import beam_conversations
from graphsvc_lab.eval.common import open_cached_embedder
from graphsvc_lab.eval.locomo import locomo_conversations
from graphsvc_lab.eval.qa import Conversation

SEED = 29


def sample(conversations: list[Conversation], pairs: int) -> tuple[list[str], list[str]]:
    """``pairs`` questions and ``pairs`` memory texts, drawn with the fixed seed."""
    rng = random.Random(SEED)
    questions = [q.text for c in conversations for q in c.questions]
    texts = [str(r["text"]) for c in conversations for r in c.rows if r["type"] == "memory"]
    return rng.sample(questions, min(pairs, len(questions))), rng.sample(
        texts, min(pairs, len(texts))
    )


@click.command("unrelated")
@click.option("--pairs", type=click.IntRange(min=10), default=150, show_default=True)
@click.option(
    "--vector-cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("eval-out") / "vector-cache",
    show_default=True,
    help="Where sentence vectors are cached, by model id and text sha256.",
)
def unrelated(pairs: int, vector_cache: Path) -> None:
    """The median cosine of random question-memory pairs per dataset, for the encoder of
    GRAPHSVC_EMBED_MODEL."""
    settings = Settings()
    embedder, why = open_cached_embedder(settings, "on", vector_cache)
    assert embedder is not None, why
    root = eval_data_root()
    datasets = {
        "locomo": locomo_conversations(root / "locomo" / "locomo_dev.json", (), "run"),
        "beam": beam_conversations(root / "beam" / "100K", (), "run", settings.max_text_chars),
    }
    medians = []
    click.echo(f"{embedder.model_id}, {pairs} x {pairs} pairs per dataset\n")
    click.echo("| dataset | median | p90 |\n|---|---:|---:|")
    for name, conversations in datasets.items():
        questions, texts = sample(conversations, pairs)
        query_codes = quantize(embedder.embed(questions, query=True))
        codes = quantize(embedder.embed(texts))
        norms = squared_norms(codes)
        values = np.concatenate([cosines(q, codes, norms) for q in query_codes])
        median = float(np.median(values))
        medians.append(median)
        click.echo(f"| {name} | {median:.3f} | {float(np.percentile(values, 90)):.3f} |")
    click.echo(f"\nunrelated_cosine (mean of the medians): {sum(medians) / len(medians):.2f}")


__all__ = ["unrelated"]
