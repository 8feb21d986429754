"""API keys: who is calling, which namespace they may touch, and whether they may write.

Keys come from ``GRAPHSVC_API_KEYS`` (``key1=ns1:write,key2=ns2:read``) and/or the file named by
``GRAPHSVC_API_KEYS_FILE`` (JSON or TOML, a mapping ``key -> {namespace, role}``). A key may also
be given as ``sha256:<64 hex digits>`` (the SHA-256 of the key), so the file need not hold the
secret itself. Only SHA-256 digests are kept in memory, and a presented key is compared with every
digest in constant time.

This module imports nothing beyond the standard library, :mod:`graphsvc.errors` and
:mod:`graphsvc.files`, so the client can use its error types without the server's dependencies.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from graphsvc import files
from graphsvc.errors import BadInputError, ForbiddenError, UnauthenticatedError
from graphsvc.model import NAMESPACE_RE

MIN_KEY_CHARS = 16
_HASHED_RE = re.compile(r"^sha256:([0-9a-fA-F]{64})$")
_GENERATE_HINT = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"


class Role(StrEnum):
    """What a key may do: ``read`` (queries) or ``write`` (queries and mutations)."""

    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: the one namespace it works in, its role, and a key fingerprint
    that is safe to log (the first 8 hex digits of the key's SHA-256, or ``anonymous``)."""

    namespace: str
    role: Role
    key_id: str

    @property
    def can_write(self) -> bool:
        return self.role is Role.WRITE

    def require_write(self, operation: str) -> None:
        """Raise ForbiddenError unless this principal may write."""
        if not self.can_write:
            raise ForbiddenError(
                f"{operation} writes, and this API key (id {self.key_id}) is read-only for "
                f"namespace {self.namespace!r}: use a key with role 'write'"
            )


def hash_key(key: str) -> bytes:
    """The SHA-256 digest of a key (UTF-8)."""
    return hashlib.sha256(key.encode("utf-8")).digest()


def _digest_of(key: str, where: str) -> bytes:
    """The digest a configured key stands for: given (``sha256:...``) or computed."""
    hashed = _HASHED_RE.match(key)
    if hashed:
        return bytes.fromhex(hashed.group(1))
    if key.startswith("sha256:"):
        raise BadInputError(f"{where}: 'sha256:' must be followed by 64 hex digits")
    if len(key) < MIN_KEY_CHARS:
        raise BadInputError(
            f"{where}: an API key of {len(key)} characters is too short; use at least "
            f"{MIN_KEY_CHARS} ({_GENERATE_HINT})"
        )
    if any(ch.isspace() for ch in key):
        raise BadInputError(f"{where}: an API key cannot contain whitespace")
    return hash_key(key)


def _principal(digest: bytes, namespace: Any, role: Any, where: str) -> Principal:
    if not isinstance(namespace, str) or not NAMESPACE_RE.match(namespace):
        raise BadInputError(
            f"{where}: invalid namespace {namespace!r}: use 1-64 letters, digits, '_' or '-'"
        )
    try:
        parsed = Role(role)
    except ValueError:
        raise BadInputError(f"{where}: invalid role {role!r}: use 'read' or 'write'") from None
    return Principal(namespace=namespace, role=parsed, key_id=digest.hex()[:8])


class ApiKeys:
    """The configured keys, as SHA-256 digests mapped to principals.

    Args:
        entries: ``(digest, principal)`` pairs; a digest may appear once.
    """

    def __init__(self, entries: Iterable[tuple[bytes, Principal]] = ()) -> None:
        self._entries: list[tuple[bytes, Principal]] = []
        seen: set[bytes] = set()
        for digest, principal in entries:
            if len(digest) != hashlib.sha256().digest_size:
                raise BadInputError("an API key digest must be 32 bytes (SHA-256)")
            if digest in seen:
                raise BadInputError(
                    f"API key {principal.key_id} is configured twice: keep one entry per key"
                )
            seen.add(digest)
            self._entries.append((digest, principal))

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def namespaces(self) -> list[str]:
        """The namespaces the keys give access to, sorted."""
        return sorted({p.namespace for _, p in self._entries})

    @classmethod
    def parse(cls, text: str, where: str = "GRAPHSVC_API_KEYS") -> ApiKeys:
        """Keys from the environment form ``key1=ns1:write,key2=ns2:read``."""
        entries: list[tuple[bytes, Principal]] = []
        for position, item in enumerate(text.split(","), start=1):
            item = item.strip()
            if not item:
                continue
            here = f"{where} entry {position}"
            key, sep, grant = item.rpartition("=")
            namespace, colon, role = grant.partition(":")
            if not sep or not colon or not key:
                raise BadInputError(
                    f"{here}: expected KEY=NAMESPACE:ROLE (e.g. 'k3y...=team-a:write'), "
                    "entries separated by commas"
                )
            digest = _digest_of(key.strip(), here)
            entries.append((digest, _principal(digest, namespace.strip(), role.strip(), here)))
        return cls(entries)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str) -> ApiKeys:
        """Keys from a mapping ``key -> {"namespace": ..., "role": ...}`` (a parsed file)."""
        entries: list[tuple[bytes, Principal]] = []
        for index, (key, grant) in enumerate(data.items(), start=1):
            here = f"{where} entry {index}"
            if not isinstance(grant, Mapping):
                raise BadInputError(f"{here}: expected a table {{namespace, role}} for the key")
            unknown = sorted(set(grant) - {"namespace", "role"})
            if unknown:
                raise BadInputError(f"{here}: unknown field(s) {', '.join(unknown)}")
            digest = _digest_of(str(key), here)
            entries.append(
                (digest, _principal(digest, grant.get("namespace"), grant.get("role"), here))
            )
        return cls(entries)

    @classmethod
    def load_file(cls, path: Path) -> ApiKeys:
        """Keys from a JSON (``.json``) or TOML (any other suffix) file, read strictly
        (:mod:`graphsvc.files`: UTF-8, bounded nesting, no NaN, no unpaired surrogate).

        Raises:
            BadInputError: the file cannot be read or is not a valid keys file (one line).
        """
        where = f"the API keys file {path}"
        text = files.decode_utf8(files.read_bytes(path, "the API keys file"), where)
        if path.suffix.lower() == ".json":
            data = files.load_json(text, where)
        else:
            data = files.load_toml(text, where)
        if not isinstance(data, Mapping):
            kind = files.kind_of(data)
            shape = "a mapping key -> {namespace, role}"
            raise BadInputError(f"{where} must hold {shape}, not {kind}")
        if not data:  # else a server would start with no keys at all, open on loopback
            raise BadInputError(
                f"{where} holds no keys: add entries key -> {{namespace, role}}, or unset "
                "GRAPHSVC_API_KEYS_FILE"
            )
        return cls.from_mapping(data, str(path))

    @classmethod
    def configured(cls, keys: str | None, keys_file: Path | None) -> ApiKeys:
        """Keys from both sources (the environment setting, then the file), merged."""
        entries: list[tuple[bytes, Principal]] = []
        if keys:
            entries.extend(cls.parse(keys)._entries)
        if keys_file is not None:
            entries.extend(cls.load_file(keys_file)._entries)
        return cls(entries)

    def authenticate(self, key: str) -> Principal:
        """The principal of a presented key; UnauthenticatedError when unknown.

        Every configured digest is compared (``hmac.compare_digest``), match or not, so the time
        taken does not depend on which key matched or how much of it.
        """
        digest = hash_key(key)
        found: Principal | None = None
        for candidate, principal in self._entries:
            if hmac.compare_digest(candidate, digest):
                found = principal
        if found is None:
            raise UnauthenticatedError(
                "unknown API key: check the key, or ask the operator for one "
                "(Authorization: Bearer <key>)"
            )
        return found

    def authenticate_header(self, header: str | None) -> Principal:
        """The principal for an ``Authorization`` header value."""
        if not header:
            raise UnauthenticatedError("no API key: send the header 'Authorization: Bearer <key>'")
        scheme, _, key = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise UnauthenticatedError(
                "malformed Authorization header: send 'Authorization: Bearer <key>'"
            )
        return self.authenticate(key.strip())


def anonymous(namespace: str) -> Principal:
    """The principal of every request when no keys are configured (loopback only)."""
    return Principal(namespace=namespace, role=Role.WRITE, key_id="anonymous")


__all__ = [
    "MIN_KEY_CHARS",
    "ApiKeys",
    "ForbiddenError",
    "Principal",
    "Role",
    "UnauthenticatedError",
    "anonymous",
    "hash_key",
]
