"""Hostile file contents, each kind once (what the fuzz of ``scripts/attack_faults.py`` found),
for the commands that read a file a user names; shared with the lab's tests of ``convert``."""

from __future__ import annotations

DEEP = 100_000

#: name -> file content: what the fuzz of the fault runner found, each kind once.
HOSTILE: dict[str, bytes] = {
    "latin-1": "caf\xe9 \xff".encode("latin-1"),
    "utf-16": '[{"a": 1}]'.encode("utf-16"),
    "binary": bytes(range(256)) * 4,
    "empty": b"",
    "not json": b"this is not json\n",
    "a number": b"42",
    "a string": b'"a string"',
    "null": b"null",
    "an object": b'{"conversation": {}}',
    "a list of numbers": b"[1, 2, 3]",
    "deep list": b"[" * DEEP + b"]" * DEEP,
    "deep object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "nan": b'[{"conversation": NaN}]',
    "infinity": b"[Infinity]",
    "a huge number": b"[" + b"9" * 20_000 + b"]",
    "a huge float": b"[1e999]",
    "a lone surrogate": b'[{"conversation": {"session_1": [{"speaker": "\\ud800"}]}}]',
    "wrong fields": b'[{"conversation": {"session_1": [{"who": "a"}]}}]',
    "wrong types": b'[{"conversation": {"session_1": "not a list", "session_1_date_time": 5}}]',
    "bad date": (
        b'[{"conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],'
        b' "session_1_date_time": "yesterday"}}]'
    ),
    "a truncated file": b'[{"conversation": {"session_1": [{"speaker": "A"',
}


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]
