"""Whether a bind address is loopback: the one rule the server's start (``graphsvc serve`` refuses
a non-loopback bind with no API keys) and the MCP transport (Host/Origin checks on loopback) share.
A module of its own so that neither imports the other's room: ``api/serve`` imports ``api/app``,
which mounts ``mcp/http``."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
