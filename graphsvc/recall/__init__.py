"""The recall engine: pure functions over what a store returns (docs/design.md, read semantics).

The package re-exports the public names of its modules, so ``from graphsvc.recall import X``
works whichever module ``X`` lives in.
"""

from graphsvc.recall.scoring import *  # noqa: F403
from graphsvc.recall.scoring import (
    ANSWER_SEEDS,
    ANSWER_SHARE,
    COMPETITION_WEIGHT,
    NEXT_RECORDED_FOLLOWS,
    OTHER_SPEAKER_FACTOR,
    PLACES,
    QUESTION_FACTOR,
    SEEDS_ASK,
    SPEAKER_NAME_CHARS,
    calibrate,
    fuse,
    is_question,
    speaker_tag,
    speakers,
)
from graphsvc.recall.scoring import __all__ as _scoring_all

__all__ = [
    *_scoring_all,
    "ANSWER_SEEDS",
    "ANSWER_SHARE",
    "COMPETITION_WEIGHT",
    "NEXT_RECORDED_FOLLOWS",
    "OTHER_SPEAKER_FACTOR",
    "PLACES",
    "QUESTION_FACTOR",
    "SEEDS_ASK",
    "SPEAKER_NAME_CHARS",
    "calibrate",
    "fuse",
    "is_question",
    "speaker_tag",
    "speakers",
]
