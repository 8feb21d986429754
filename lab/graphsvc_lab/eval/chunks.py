"""``graphsvc eval chunks``: how a long memory is best encoded, measured by dense-only recall.

Each memory of the chosen BEAM chats is encoded as windows of ``max_length`` tokens (up to
``--windows``); from the same vectors it scores four ways of turning a long text into what a query
is compared with:

- ``truncate``: the first window only (what one window per text gives),
- ``truncate-2x``: the text cut at twice the window (one window of ``2 * max_length`` tokens),
- ``mean``: the normalised mean of the windows' vectors (one vector per memory),
- ``max``: the best window's cosine (several vectors per memory).

The figures are recall@5 and @10 of the answerable questions' evidence, with float cosines over
every memory of the chat, beside the share of memories longer than one window.
"""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np

from graphsvc.embedding.encoder import OnnxEmbedder
from graphsvc.settings import Settings
from graphsvc_lab.datasets import eval_data_root
from graphsvc_lab.eval.beam import beam_conversations
from graphsvc_lab.eval.metrics import mean, recall_at_k

WAYS = ("truncate", "truncate-2x", "mean", "max")


@click.command("chunks")
@click.option("--data", type=click.Path(path_type=Path), default=None, help="BEAM 100K folder.")
@click.option("--only", multiple=True, help="Only these chats (repeatable; default all).")
@click.option("--windows", type=click.IntRange(min=2), default=8, show_default=True)
@click.option("--max-length", type=click.IntRange(min=16), default=256, show_default=True)
def chunks(data: Path | None, only: tuple[str, ...], windows: int, max_length: int) -> None:
    """Dense-only recall of truncation against windowed encodings of long BEAM messages, with
    the model GRAPHSVC_EMBED_MODEL names."""
    settings = Settings()
    path = data or eval_data_root() / "beam" / "100K"
    model = settings.embed_model
    encoder = OnnxEmbedder.from_package(
        model, max_length=max_length, chunks=windows, home=settings.embed_model_home
    )
    longer = OnnxEmbedder.from_package(
        model, max_length=2 * max_length, home=settings.embed_model_home
    )
    recall: dict[str, dict[int, list[float]]] = {way: {5: [], 10: []} for way in WAYS}
    long_share: list[float] = []
    for conversation in beam_conversations(path, only, "chunks"):
        memories = [row for row in conversation.rows if row["type"] == "memory"]
        keys = [str(row["source"]) for row in memories]
        texts = [str(row["text"]) for row in memories]
        groups = encoder.embed_windows(texts)
        long_share.append(mean(1.0 if len(g) > 1 else 0.0 for g in groups))
        first = np.stack([g[0] for g in groups])
        averaged = encoder.embed(texts)
        cut = longer.embed(texts)
        owner = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups)])
        every = np.concatenate(groups)
        questions = [q for q in conversation.questions if q.answerable and q.evidence]
        vectors = encoder.embed([q.text for q in questions], query=True)
        for question, vector in zip(questions, vectors, strict=True):
            best = np.full(len(keys), -2.0)
            np.maximum.at(best, owner, every @ vector)
            scores = {
                "truncate": first @ vector,
                "truncate-2x": cut @ vector,
                "mean": averaged @ vector,
                "max": best,
            }
            for way, score in scores.items():
                order = np.lexsort((np.arange(len(keys)), -score))[:10]
                ranked = [keys[int(i)] for i in order]
                for k in (5, 10):
                    recall[way][k].append(recall_at_k(ranked, question.evidence, k))
        click.echo(f"chat {conversation.name}: {len(questions)} questions", err=True)
    click.echo(f"model {encoder.model_id}, windows of {max_length} tokens (up to {windows})")
    click.echo(f"memories longer than one window: {mean(long_share):.3f} (mean over chats)")
    click.echo("| way | recall@5 | recall@10 | questions |\n|---|---:|---:|---:|")
    for way in WAYS:
        r5, r10 = recall[way][5], recall[way][10]
        click.echo(f"| {way} | {mean(r5):.3f} | {mean(r10):.3f} | {len(r5)} |")
