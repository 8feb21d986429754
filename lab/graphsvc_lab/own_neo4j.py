"""A Neo4j of one's own from the checkout's launcher (``scripts/neo4j.sh``), in its own home and on
its own ports: for the fault tests and the fault runner, which kill and restart it. They never touch
the server ``GRAPHSVC_NEO4J_URI`` names, which others may be using.

Needs a checkout (the launcher is not in the wheel), Java 17 and, for the first build, Maven.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

LAUNCHER = Path(__file__).resolve().parents[2] / "scripts" / "neo4j.sh"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class OwnNeo4j:
    """The bundled launcher on its own home and ports.

    Args:
        home: the server's folder (data, logs, pid file).
        bolt_port: its Bolt port (0: a free one).
        http_port: its HTTP port, for the Browser (0: a free one).
        heap: the JVM heap (``GRAPHSVC_NEO4J_HEAP``).
        timeout: seconds one launcher command may take (a first start builds with Maven).
    """

    def __init__(
        self,
        home: Path,
        *,
        bolt_port: int = 0,
        http_port: int = 0,
        heap: str = "512m",
        timeout: float = 600,
    ) -> None:
        self.home = home
        self.bolt_port = bolt_port or free_port()
        self.http_port = http_port or free_port()
        self.heap = heap
        self.timeout = timeout
        self.uri = f"bolt://127.0.0.1:{self.bolt_port}"

    def launcher(self, command: str) -> subprocess.CompletedProcess[str]:
        """Run ``scripts/neo4j.sh COMMAND`` (start, stop, status) for this server."""
        if not LAUNCHER.is_file():
            raise RuntimeError(f"the Neo4j launcher is not here ({LAUNCHER}): use a checkout")
        env = dict(os.environ)
        env.update(
            GRAPHSVC_NEO4J_HOME=str(self.home),
            GRAPHSVC_NEO4J_HOST="127.0.0.1",
            GRAPHSVC_NEO4J_BOLT_PORT=str(self.bolt_port),
            GRAPHSVC_NEO4J_HTTP_PORT=str(self.http_port),
            GRAPHSVC_NEO4J_HEAP=self.heap,
        )
        return subprocess.run(
            ["bash", str(LAUNCHER), command],
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
            env=env,
        )

    def start(self) -> float:
        """Start and wait until Bolt answers; the seconds it took."""
        began = time.monotonic()
        done = self.launcher("start")
        if done.returncode != 0:
            raise RuntimeError(f"the launcher could not start Neo4j:\n{done.stdout}{done.stderr}")
        return time.monotonic() - began

    def stop(self) -> float:
        """Stop gracefully (SIGTERM; the launcher waits); the seconds it took."""
        began = time.monotonic()
        done = self.launcher("stop")
        if done.returncode != 0:
            raise RuntimeError(f"the launcher could not stop Neo4j:\n{done.stdout}{done.stderr}")
        return time.monotonic() - began

    def running(self) -> bool:
        """True when the launcher says this server runs."""
        return self.launcher("status").returncode == 0

    def pid(self) -> int:
        """The server's pid, checked to be this server (its home and Bolt port on the command
        line), so that nothing else is ever killed."""
        pid = int((self.home / "neo4j.pid").read_text().strip())
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        mine = [b"--home", str(self.home).encode(), b"--bolt-port", str(self.bolt_port).encode()]
        if not all(arg in args for arg in mine):
            raise RuntimeError(f"pid {pid} is not this Neo4j ({args!r}): not killing it")
        return pid

    def kill(self) -> None:
        """SIGKILL, then wait until the process is gone."""
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        cmdline = Path(f"/proc/{pid}/cmdline")
        deadline = time.monotonic() + 30
        while cmdline.exists() and cmdline.read_bytes():
            if time.monotonic() > deadline:
                raise RuntimeError(f"pid {pid} survived SIGKILL")
            time.sleep(0.05)


__all__ = ["LAUNCHER", "OwnNeo4j", "free_port"]
