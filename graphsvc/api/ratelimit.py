"""Rate limits of the HTTP API: token buckets in memory, per process.

Three limits, each a bucket per name (``GRAPHSVC_RATE_LIMIT_*``, ``GRAPHSVC_AUTH_FAILURES_*``):

- requests per client address (every ``/graphql`` request, the GraphiQL page included);
- requests per API key (after the key is known; without keys, the ``anonymous`` principal);
- failed authentications per client address. When that bucket is empty, the address gets 429
  for every request that needs a key *before* its key is checked, so a guesser learns nothing
  from the answers until the bucket refills.

A refused request answers 429 with ``Retry-After`` (whole seconds) and ``code: LIMIT_EXCEEDED``.
The buckets live in this process: with several server processes each has its own (the limits
multiply), and a restart refills them. The client address is the TCP peer's, unless the peer is
one of ``GRAPHSVC_TRUSTED_PROXIES``: then it is the last address of ``X-Forwarded-For`` that is
not a trusted proxy (:class:`ClientAddresses`), so behind a reverse proxy one client's failed
keys lock out that client, not every tenant behind the proxy. Each limit keeps at most
:data:`MAX_BUCKETS` names; past that the least recently seen name is forgotten (a full bucket
again).
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import Scope

from graphsvc.settings import Settings

MAX_BUCKETS = 10_000


@dataclass(frozen=True)
class Rate:
    """``per_second`` tokens added per second, up to ``burst`` (0 per second: no limit)."""

    per_second: float
    burst: float

    @property
    def limited(self) -> bool:
        """False when the rate is 0 (no limit)."""
        return self.per_second > 0


class TokenBuckets:
    """A token bucket per name, in memory, at most ``max_names`` of them.

    Args:
        rate: the refill rate and the size of every bucket.
        max_names: names kept; the least recently used is dropped past it.
        clock: seconds, monotonic (``time.monotonic``; tests pass their own).
    """

    def __init__(
        self,
        rate: Rate,
        *,
        max_names: int = MAX_BUCKETS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.max_names = max_names
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, time
        self._lock = threading.Lock()

    def _level(self, name: str, now: float) -> float:
        tokens, then = self._buckets.get(name, (self.rate.burst, now))
        return min(self.rate.burst, tokens + (now - then) * self.rate.per_second)

    def _store(self, name: str, tokens: float, now: float) -> None:
        self._buckets[name] = (tokens, now)
        self._buckets.move_to_end(name)
        while len(self._buckets) > self.max_names:
            self._buckets.popitem(last=False)

    def take(self, name: str) -> float:
        """Take a token for ``name``: 0.0 when there was one, else the seconds until there will
        be one (nothing taken)."""
        if not self.rate.limited:
            return 0.0
        with self._lock:
            now = self.clock()
            tokens = self._level(name, now)
            if tokens >= 1.0:
                self._store(name, tokens - 1.0, now)
                return 0.0
            self._store(name, tokens, now)
            return (1.0 - tokens) / self.rate.per_second

    def wait(self, name: str) -> float:
        """The seconds until ``name`` has a token (0.0: it has one now); nothing is taken."""
        if not self.rate.limited:
            return 0.0
        with self._lock:
            tokens = self._level(name, self.clock())
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate.per_second


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))


_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: Most ``X-Forwarded-For`` entries read, from the right (a proxy chain is short).
MAX_FORWARDED_HOPS = 16


def _address(text: str) -> _Address | None:
    """The address of an ``X-Forwarded-For`` entry: ``198.51.100.2``, ``2001:db8::5``, and the
    same with a port as some proxies write them (``198.51.100.2:54321``,
    ``[2001:db8::5]:443``, ``[2001:db8::5]``); ``None`` for anything else."""
    text = text.strip()
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]")
        if not bracket or (port and not (port[:1] == ":" and port[1:].isdigit())):
            return None
    elif text.count(":") == 1:  # IPv4 with a port (a bare IPv6 address has several colons)
        host, _, port = text.partition(":")
        if not port.isdigit():
            return None
    else:
        host = text
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclass(frozen=True)
class ClientAddresses:
    """Who a request comes from, for the limits and the access log.

    The TCP peer, unless it is one of ``trusted`` (``GRAPHSVC_TRUSTED_PROXIES``): then the
    ``X-Forwarded-For`` entries are read from the right (each proxy appends the address it got
    the request from), trusted proxies skipped, and the first other address is the client. The
    entries left of it are whatever the client sent, so they are never read. A header that names
    no such address (missing, garbled, only proxies) leaves the peer's address.
    """

    trusted: tuple[_Network, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> ClientAddresses:
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in settings.trusted_proxies))

    def _is_trusted(self, address: _Address) -> bool:
        return any(address in network for network in self.trusted)

    def of(self, scope: Scope) -> str:
        """The client address of a request (its ASGI scope)."""
        client = scope.get("client")
        peer = str(client[0]) if client else "unknown"
        address = _address(peer) if self.trusted else None
        if address is None or not self._is_trusted(address):
            return peer
        hops: list[str] = []
        for name, value in scope.get("headers", ()):
            if name == b"x-forwarded-for":
                hops.extend(value.decode("latin-1").split(","))
        for hop in reversed(hops[-MAX_FORWARDED_HOPS:]):
            forwarded = _address(hop)
            if forwarded is None:
                return peer
            if not self._is_trusted(forwarded):
                return str(forwarded)
        return peer


@dataclass
class RateLimits:
    """The API's three limits, and how a request's client is found. Build it with
    :meth:`from_settings`."""

    per_client: TokenBuckets
    per_key: TokenBuckets
    auth_failures: TokenBuckets
    clients: ClientAddresses = field(default_factory=ClientAddresses)

    @classmethod
    def from_settings(
        cls, settings: Settings, clock: Callable[[], float] = time.monotonic
    ) -> RateLimits:
        """The limits the settings name (0 turns one off)."""
        failures = settings.auth_failures_per_minute
        return cls(
            per_client=TokenBuckets(
                Rate(settings.rate_limit_per_client, settings.rate_limit_per_client_burst),
                clock=clock,
            ),
            per_key=TokenBuckets(
                Rate(settings.rate_limit_per_key, settings.rate_limit_per_key_burst), clock=clock
            ),
            auth_failures=TokenBuckets(Rate(failures / 60.0, max(failures, 1.0)), clock=clock),
            clients=ClientAddresses.from_settings(settings),
        )


__all__ = [
    "MAX_BUCKETS",
    "MAX_FORWARDED_HOPS",
    "ClientAddresses",
    "Rate",
    "RateLimits",
    "TokenBuckets",
    "retry_after",
]
