"""uvicorn's HTTP/1.1 protocols (httptools and h11) with bounds on a request's headers.

uvicorn bounds the idle time of a kept-alive connection between requests
(``timeout_keep_alive``, cancelled as soon as any byte arrives), but not the time a client takes
to send its headers: a connection that sends nothing, or a header line a byte every few seconds
("slowloris"), is kept open for ever, and enough of them exhaust the process's file descriptors.
Both protocols here arm a timer when a connection opens and again after every response; when it
fires and no request is being answered (its headers have not all arrived), the connection gets
``408 Request Timeout`` and is closed (:class:`HeaderDeadline`). The time a body takes is bounded
by the application (:class:`~graphsvc.api.middleware.BodyLimit`, ``GRAPHSVC_BODY_TIMEOUT``).

The size of a request's headers (request line included) is bounded too, at
:data:`MAX_HEAD_BYTES`. h11 bounds a head that is still incomplete
(``h11_max_incomplete_event_size``; uvicorn answers 400), so a head that arrived in one read (at
most the read's size, 256 KiB) is parsed. httptools bounds nothing (its parser keeps whatever
arrives), so the httptools protocol here (:func:`httptools_protocol`) counts both the bytes that
arrive while a request's headers are incomplete and the request line and headers as parsed
(:class:`HeadSize`), and past the bound answers ``431 Request Header Fields Too Large``
(``LIMIT_EXCEEDED``) and closes the connection: at most the bound plus one read is held.

Which parser serves is ``GRAPHSVC_HTTP_PARSER`` (:func:`protocol_class`): httptools (C, less CPU
a request) when installed, else h11; either way both bounds hold.

What this cannot bound in process: connections that are accepted faster than they time out (a
flood of new connections; that is the job of a firewall or a reverse proxy in front), and the
TLS handshake (graphsvc serves plain HTTP; terminate TLS in a proxy).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
from typing import Any, Protocol

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from graphsvc.errors import BadInputError

#: Most bytes of a request's request line and headers (h11's own default bound).
MAX_HEAD_BYTES = 16 * 1024
PARSERS = ("auto", "httptools", "h11")


def _response(status: bytes, message: bytes, code: bytes = b"LIMIT_EXCEEDED") -> bytes:
    body = (
        b'{"data":null,"errors":[{"message":"' + message + b'","extensions":'
        b'{"code":"' + code + b'"}}]}'
    )
    return (
        b"HTTP/1.1 " + status + b"\r\n"
        b"content-type: application/json\r\n"
        b"connection: close\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n"
        b"\r\n" + body
    )


#: What a connection that ran out of time gets before it is closed.
REQUEST_TIMEOUT_RESPONSE = _response(
    b"408 Request Timeout",
    b"the request headers did not arrive within GRAPHSVC_HEADER_TIMEOUT: send them at once",
)
#: What a request that is not valid HTTP/1.1 gets (httptools refuses, e.g., control characters in
#: a header value) before the connection is closed: graphsvc's error shape, as for every refusal.
INVALID_REQUEST_RESPONSE = _response(
    b"400 Bad Request",
    b"the request is not valid HTTP/1.1 (a malformed request line or header, or a control "
    b"character in a header value): fix the client's request",
    b"BAD_INPUT",
)
#: What a connection whose request headers pass :data:`MAX_HEAD_BYTES` gets before it is closed.
HEADERS_TOO_LARGE_RESPONSE = _response(
    b"431 Request Header Fields Too Large",
    b"the request line and headers are larger than " + str(MAX_HEAD_BYTES).encode() + b" bytes: "
    b"send fewer or shorter headers",
)


def httptools_installed() -> bool:
    """True when the httptools parser can be imported (the ``server`` extra installs it)."""
    return importlib.util.find_spec("httptools") is not None


def protocol_class(parser: str) -> type[asyncio.Protocol]:
    """The HTTP protocol class for ``GRAPHSVC_HTTP_PARSER``: ``httptools``, ``h11``, or
    ``auto`` (httptools when installed, else h11).

    Raises:
        BadInputError: httptools is asked for but not installed, or the name is unknown.
    """
    if parser not in PARSERS:
        raise BadInputError(
            f"GRAPHSVC_HTTP_PARSER={parser!r}: use one of {', '.join(PARSERS)} (auto: httptools "
            "when installed)"
        )
    if parser == "h11" or (parser == "auto" and not httptools_installed()):
        return HeaderDeadlineProtocol
    if not httptools_installed():
        raise BadInputError(
            "GRAPHSVC_HTTP_PARSER=httptools, but httptools is not installed: install it "
            "(pip install 'httptools>=0.6') or set GRAPHSVC_HTTP_PARSER=auto or h11"
        )
    return httptools_protocol()


class ServerConfig(uvicorn.Config):
    """uvicorn's configuration plus ``header_timeout`` (seconds), with one of this module's
    protocols as the HTTP protocol (:func:`protocol_class`).

    Args:
        app: the ASGI application.
        header_timeout: seconds a connection may take to send a request's headers.
        http_parser: ``GRAPHSVC_HTTP_PARSER`` (``auto``, ``httptools`` or ``h11``).
        **kwargs: the rest of :class:`uvicorn.Config`.

    Raises:
        BadInputError: the parser asked for is not installed or unknown.
    """

    def __init__(
        self, app: Any, *, header_timeout: float, http_parser: str = "auto", **kwargs: Any
    ) -> None:
        super().__init__(
            app,
            http=protocol_class(http_parser),
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            **kwargs,
        )
        self.header_timeout = header_timeout


class _HeadTooLargeError(Exception):
    """Raised from the httptools parser's callback when a request's headers passed the bound
    (the parser then stops, and the connection is closed)."""


class _Cycle(Protocol):
    response_complete: bool


class _Connection(Protocol):
    """What :class:`HeaderDeadline` reads of its protocol (both of uvicorn's have it)."""

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    @property
    def cycle(self) -> _Cycle | None: ...


class HeaderDeadline:
    """The deadline for a request's headers on one connection (see the module's description).

    Args:
        connection: the protocol of the connection.
        timeout: seconds; ``None``: no deadline.
    """

    __slots__ = ("_timer", "_waiting_after", "connection", "timeout")

    def __init__(self, connection: _Connection, timeout: float | None) -> None:
        self.connection = connection
        self.timeout = timeout
        self._timer: asyncio.TimerHandle | None = None
        self._waiting_after: _Cycle | None = None

    def arm(self) -> None:
        """Start the clock: the connection opened, or a response was sent."""
        self.cancel()
        if self.timeout is None:
            return
        self._waiting_after = self.connection.cycle
        self._timer = self.connection.loop.call_later(self.timeout, self._fire)

    def cancel(self) -> None:
        """Stop the clock (the connection closed)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        transport = self.connection.transport
        if transport.is_closing():
            return
        cycle = self.connection.cycle
        if cycle is not None and (cycle is not self._waiting_after or not cycle.response_complete):
            return  # a request's headers arrived in time: it is being answered (or was)
        transport.write(REQUEST_TIMEOUT_RESPONSE)
        transport.close()


class HeaderDeadlineProtocol(H11Protocol):
    """h11 with a deadline for request headers (see the module's description); h11 bounds their
    size itself."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.header_deadline = HeaderDeadline(self, getattr(config, "header_timeout", None))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self.header_deadline.arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.header_deadline.arm()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's plain-text 400 for a request h11 cannot parse, in graphsvc's error shape."""
        if not self.transport.is_closing():
            self.transport.write(INVALID_REQUEST_RESPONSE)
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.header_deadline.cancel()
        super().connection_lost(exc)


class HeadSize:
    """The size of the request heads arriving on one connection, against a bound (httptools
    bounds nothing itself; see the module's description). Two counts: the bytes received while a
    request's headers are incomplete (what is held before the parser has seen them all), and the
    request line and headers as parsed (a head that arrived in one read).

    Args:
        bound: most bytes of a request's line and headers.
    """

    __slots__ = ("bound", "in_head", "parsed", "received")

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.in_head = True  # the next bytes belong to a request line or headers
        self.received = 0  # bytes received while in_head
        self.parsed = 0  # the current request's line and headers, as parsed

    def arrived(self, size: int) -> None:
        """``size`` bytes arrived on the connection."""
        if self.in_head:
            self.received += size

    def incomplete_too_large(self) -> bool:
        """Whether the bytes of a head not yet complete passed the bound."""
        return self.in_head and self.received > self.bound

    def begin(self) -> None:
        """A request's line begins."""
        self.parsed = 0

    def add(self, size: int) -> None:
        """``size`` bytes of the request line or of a header were parsed."""
        self.parsed += size

    def complete(self) -> bool:
        """The head is complete: False when it passed the bound (all of it in one read), else the
        body's bytes follow, which the bound does not count."""
        if self.parsed > self.bound:
            return False
        self.in_head = False
        self.received = 0
        return True

    def message_complete(self) -> None:
        """The request's body ended: the next bytes are the next request's head."""
        self.in_head = True


@functools.cache
def httptools_protocol() -> type[asyncio.Protocol]:
    """:class:`HttpToolsDeadlineProtocol`: uvicorn's httptools protocol with the deadline and the
    size bound of a request's headers (see the module's description). Made on first use, so that
    h11 alone serves where httptools is not installed.

    Raises:
        ImportError: httptools is not installed.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HttpToolsDeadlineProtocol(HttpToolsProtocol):
        """httptools with a deadline for request headers and a bound on their size."""

        def __init__(
            self,
            config: uvicorn.Config,
            server_state: ServerState,
            app_state: dict[str, Any],
            _loop: asyncio.AbstractEventLoop | None = None,
        ) -> None:
            super().__init__(config, server_state, app_state, _loop)
            self.header_deadline = HeaderDeadline(self, getattr(config, "header_timeout", None))
            self.head_size = HeadSize(MAX_HEAD_BYTES)

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self.header_deadline.arm()

        def data_received(self, data: bytes) -> None:
            self.head_size.arrived(len(data))
            super().data_received(data)  # the parser's callbacks below run in here
            if self.head_size.incomplete_too_large():
                self.refuse_head()  # incomplete headers past the bound: read no more of them

        def refuse_head(self) -> None:
            """Answer 431 and close the connection (once)."""
            if not self.transport.is_closing():
                self.transport.write(HEADERS_TOO_LARGE_RESPONSE)
                self.transport.close()

        def send_400_response(self, msg: str) -> None:
            """uvicorn's plain-text 400 for a request httptools cannot parse, in graphsvc's error
            shape; nothing after a 431 (a refused head fails parsing too)."""
            if not self.transport.is_closing():
                self.transport.write(INVALID_REQUEST_RESPONSE)
                self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.head_size.begin()

        def on_url(self, url: bytes) -> None:
            self.head_size.add(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self.head_size.add(len(name) + len(value) + 4)  # "name: value\r\n"
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            if not self.head_size.complete():  # all of it in one read, past the bound
                self.refuse_head()
                raise _HeadTooLargeError
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self.head_size.message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self.header_deadline.arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self.header_deadline.cancel()
            super().connection_lost(exc)

    return HttpToolsDeadlineProtocol


__all__ = [
    "HEADERS_TOO_LARGE_RESPONSE",
    "INVALID_REQUEST_RESPONSE",
    "MAX_HEAD_BYTES",
    "PARSERS",
    "REQUEST_TIMEOUT_RESPONSE",
    "HeadSize",
    "HeaderDeadline",
    "HeaderDeadlineProtocol",
    "ServerConfig",
    "httptools_installed",
    "httptools_protocol",
    "protocol_class",
]
