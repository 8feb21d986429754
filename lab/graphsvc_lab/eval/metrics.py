"""Pure metric functions of the evaluation (no I/O): recall@k, rank correlation, ROC.

Every function is total on its documented inputs and returns ``nan`` (never raises) where a figure
is undefined, such as the mean of nothing; the report prints ``nan`` as ``n/a``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

NAN = float("nan")


def recall_at_k(ranked: Sequence[K], gold: Collection[K], k: int) -> float:
    """The share of ``gold`` found in the first ``k`` items of ``ranked`` (nan without gold)."""
    if not gold:
        return NAN
    top = set(ranked[:k])
    return sum(1 for item in set(gold) if item in top) / len(set(gold))


def all_hit_at_k(ranked: Sequence[K], gold: Collection[K], k: int) -> float:
    """1.0 when every item of ``gold`` is in the first ``k`` of ``ranked``, else 0.0 (nan without
    gold)."""
    if not gold:
        return NAN
    return 1.0 if set(gold) <= set(ranked[:k]) else 0.0


def recall_of(found: Iterable[K], gold: Collection[K]) -> float:
    """The share of ``gold`` in ``found`` (an unordered set, such as packed capsules)."""
    if not gold:
        return NAN
    got = set(found)
    return sum(1 for item in set(gold) if item in got) / len(set(gold))


def precision_of(found: Collection[K], relevant: Collection[K]) -> float:
    """The share of ``found`` that is ``relevant`` (nan when nothing was found)."""
    if not found:
        return NAN
    wanted = set(relevant)
    return sum(1 for item in set(found) if item in wanted) / len(set(found))


def first_rank(ranked: Sequence[K], wanted: Collection[K]) -> float:
    """The 1-based rank of the first item of ``ranked`` in ``wanted``; ``inf`` when none is."""
    keep = set(wanted)
    for rank, item in enumerate(ranked, start=1):
        if item in keep:
            return float(rank)
    return math.inf


def kendall_tau(observed: Sequence[K], true_key: Mapping[K, float]) -> float:
    """Kendall's tau-a between the order of ``observed`` and the order ``true_key`` gives.

    Only pairs with distinct true keys count: (concordant - discordant) / those pairs. 1.0 means
    ``observed`` is in true order, -1.0 reversed; nan with fewer than one such pair. Items of
    ``observed`` missing from ``true_key`` are ignored.
    """
    items = [item for item in observed if item in true_key]
    concordant = discordant = 0
    for i, first in enumerate(items):
        for second in items[i + 1 :]:
            a, b = true_key[first], true_key[second]
            if a < b:
                concordant += 1
            elif a > b:
                discordant += 1
    pairs = concordant + discordant
    return (concordant - discordant) / pairs if pairs else NAN


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Area under the ROC curve of a signal where higher means "positive": the probability that a
    random positive scores above a random negative, ties counting one half (Mann-Whitney U). nan
    when either side is empty."""
    if not positives or not negatives:
        return NAN
    ordered = sorted(negatives)
    total = 0.0
    # For each positive: negatives strictly below it, plus half of those equal (two bisections).
    for value in positives:
        below = bisect.bisect_left(ordered, value)
        equal = bisect.bisect_right(ordered, value) - below
        total += below + 0.5 * equal
    return total / (len(positives) * len(negatives))


def roc_curve(positives: Sequence[float], negatives: Sequence[float]) -> list[tuple[float, float]]:
    """ROC points ``(false positive rate, true positive rate)`` from (0, 0) to (1, 1), one per
    distinct threshold of a signal where higher means "positive" (predict positive when the signal
    is at least the threshold)."""
    if not positives or not negatives:
        return [(0.0, 0.0), (1.0, 1.0)]
    points = [(0.0, 0.0)]
    for threshold in sorted(set(positives) | set(negatives), reverse=True):
        tpr = sum(1 for v in positives if v >= threshold) / len(positives)
        fpr = sum(1 for v in negatives if v >= threshold) / len(negatives)
        points.append((fpr, tpr))
    if points[-1] != (1.0, 1.0):
        points.append((1.0, 1.0))
    return points


def precision_recall_f1(
    predicted: Sequence[bool], actual: Sequence[bool]
) -> tuple[float, float, float]:
    """Precision, recall and F1 of boolean predictions against the truth (nan where undefined:
    precision with no positive prediction, recall with no positive case)."""
    if len(predicted) != len(actual):
        raise ValueError("predicted and actual differ in length")
    tp = sum(1 for p, a in zip(predicted, actual, strict=True) if p and a)
    fp = sum(1 for p, a in zip(predicted, actual, strict=True) if p and not a)
    fn = sum(1 for p, a in zip(predicted, actual, strict=True) if a and not p)
    precision = tp / (tp + fp) if tp + fp else NAN
    recall = tp / (tp + fn) if tp + fn else NAN
    if math.isnan(precision) or math.isnan(recall) or precision + recall == 0.0:
        f1 = 0.0 if tp == 0 and (tp + fn) > 0 else NAN
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def operating_point(
    positives: Sequence[float], negatives: Sequence[float], max_false: float
) -> tuple[float, float, float]:
    """The threshold of a signal (higher means "positive"; predict positive when the signal is at
    least the threshold) that finds the most positives while at most ``max_false`` of the
    negatives are predicted positive: ``(threshold, true positive rate, false positive rate)``.
    ``(inf, 0.0, 0.0)`` when no threshold keeps within ``max_false``; all nan without positives or
    negatives."""
    if not positives or not negatives:
        return NAN, NAN, NAN
    ordered = sorted(negatives)
    best = (math.inf, 0.0, 0.0)
    for threshold in sorted(set(positives) | set(negatives), reverse=True):
        # Negatives at or above the threshold: everything from the first one >= it.
        fpr = (len(ordered) - bisect.bisect_left(ordered, threshold)) / len(ordered)
        if fpr > max_false:
            break
        tpr = sum(1 for v in positives if v >= threshold) / len(positives)
        best = (threshold, tpr, fpr)
    return best


def mean(values: Iterable[float]) -> float:
    """The mean of the finite values (nan ones are skipped); nan when there are none."""
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else NAN


def stdev(values: Iterable[float]) -> float:
    """The sample standard deviation (n - 1) of the finite values; nan with fewer than two."""
    kept = [v for v in values if not math.isnan(v)]
    if len(kept) < 2:
        return NAN
    centre = sum(kept) / len(kept)
    return math.sqrt(sum((v - centre) ** 2 for v in kept) / (len(kept) - 1))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between closest ranks; nan for no
    values."""
    if not values:
        return NAN
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    """The median (the 50th percentile); nan for no values."""
    return percentile(values, 50.0)


__all__ = [
    "NAN",
    "all_hit_at_k",
    "auroc",
    "first_rank",
    "kendall_tau",
    "mean",
    "median",
    "operating_point",
    "percentile",
    "precision_of",
    "precision_recall_f1",
    "recall_at_k",
    "recall_of",
    "roc_curve",
    "stdev",
]
