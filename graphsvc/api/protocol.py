"""uvicorn's HTTP/1.1 protocol (h11) with a deadline for a request's headers.

uvicorn bounds the size of a request's headers (``h11_max_incomplete_event_size``, 16 KiB) and
the idle time of a kept-alive connection between requests (``timeout_keep_alive``, cancelled as
soon as any byte arrives), but not the time a client takes to send its headers: a connection that
sends nothing, or a header line a byte every few seconds ("slowloris"), is kept open for ever,
and enough of them exhaust the process's file descriptors. :class:`HeaderDeadlineProtocol` arms
a timer when a connection opens and again after every response; when it fires and no request is
being answered (its headers have not all arrived), the connection gets ``408 Request Timeout``
and is closed. The time a body takes is bounded by the application
(:class:`~graphsvc.api.app.BodyLimit`, ``GRAPHSVC_BODY_TIMEOUT``).

What this cannot bound in process: connections that are accepted faster than they time out (a
flood of new connections; that is the job of a firewall or a reverse proxy in front), and the
TLS handshake (graphsvc serves plain HTTP; terminate TLS in a proxy).

The protocol is always the h11 one (``httptools``, when installed, would otherwise be picked by
uvicorn's ``auto``), so the deadline holds whatever is installed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle
from uvicorn.server import ServerState

_TIMEOUT_BODY = (
    b'{"data":null,"errors":[{"message":"the request headers did not arrive within '
    b'GRAPHSVC_HEADER_TIMEOUT: send them at once","extensions":{"code":"LIMIT_EXCEEDED"}}]}'
)
#: What a connection that ran out of time gets before it is closed.
REQUEST_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: application/json\r\n"
    b"connection: close\r\n"
    b"content-length: " + str(len(_TIMEOUT_BODY)).encode() + b"\r\n"
    b"\r\n" + _TIMEOUT_BODY
)


class ServerConfig(uvicorn.Config):
    """uvicorn's configuration plus ``header_timeout`` (seconds), with
    :class:`HeaderDeadlineProtocol` as the HTTP protocol.

    Args:
        app: the ASGI application.
        header_timeout: seconds a connection may take to send a request's headers.
        **kwargs: the rest of :class:`uvicorn.Config`.
    """

    def __init__(self, app: Any, *, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(app, http=HeaderDeadlineProtocol, **kwargs)
        self.header_timeout = header_timeout


class HeaderDeadlineProtocol(H11Protocol):
    """h11 with a deadline for request headers (see the module's description)."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.header_timeout: float | None = getattr(config, "header_timeout", None)
        self._header_timer: asyncio.TimerHandle | None = None
        self._waiting_after: RequestResponseCycle | None = None

    def _arm_header_deadline(self) -> None:
        self._cancel_header_deadline()
        if self.header_timeout is None:
            return
        self._waiting_after = self.cycle
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_deadline)

    def _cancel_header_deadline(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_deadline(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and (cycle is not self._waiting_after or not cycle.response_complete):
            return  # a request's headers arrived in time: it is being answered (or was)
        self.transport.write(REQUEST_TIMEOUT_RESPONSE)
        self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        super().connection_lost(exc)


__all__ = ["REQUEST_TIMEOUT_RESPONSE", "HeaderDeadlineProtocol", "ServerConfig"]
