"""Serving the app with uvicorn inside limits a careless or hostile client cannot pass.

uvicorn (0.54) bounds concurrency only once a request's headers are in
(``limit_concurrency`` answers 503 then), times out idle keep-alive connections, and
bounds one unparsed event (``h11_max_incomplete_event_size``), but it neither times out a
request whose headers never finish nor caps connections: 300 half-sent requests hold 300
descriptors for ever, and past ``RLIMIT_NOFILE`` it accepts nothing more (``accept``
fails with EMFILE; the history and the jobs' logs cannot open files either). The protocol
here is uvicorn's own h11 protocol with two rules added:

* **a connection cap**: past ``max_connections`` open connections a new one is answered
  ``503`` and closed at once, so it holds its descriptor for no time;
* **a header timeout**: a connection that has not sent a whole request line and headers
  ``header_timeout`` seconds after it opened (or after its last answer) is closed.

The cap follows the descriptors the process may open: half of ``RLIMIT_NOFILE`` past a
reserve for the history, the run store and the jobs, and never more than asked.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_HEADER_TIMEOUT", "DEFAULT_MAX_CONNECTIONS", "connection_cap", "uvicorn_options"]

DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_HEADER_TIMEOUT = 10.0
_RESERVED_DESCRIPTORS = 64  # the history, the run store, logs, jobs' pipes, the listener
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
    b"content-length: 28\r\nconnection: close\r\n\r\ntoo many connections; retry\n"
)


def connection_cap(asked: int = DEFAULT_MAX_CONNECTIONS) -> int:
    """``asked``, lowered to what this process's descriptor limit leaves for connections."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return asked
    return max(1, min(asked, (soft - _RESERVED_DESCRIPTORS) // 2))


class _Guarded(H11Protocol):
    """uvicorn's h11 protocol with a connection cap and a header timeout."""

    max_connections = DEFAULT_MAX_CONNECTIONS
    header_timeout = DEFAULT_HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.write(_BUSY)
            transport.close()
            return
        self._await_headers()

    def _await_headers(self) -> None:
        self._stop_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        # IDLE: no whole request line and headers yet (h11 leaves IDLE on a Request event)
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._stop_header_timer()  # the headers are in: the app has the request

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_headers()  # the next request on this connection gets as long

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)


def uvicorn_options(
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` that apply these limits."""
    cap = connection_cap(max_connections)
    protocol = type(
        "GuardedH11Protocol",
        (_Guarded,),
        {"max_connections": cap, "header_timeout": header_timeout},
    )
    return {
        "http": protocol,
        # requests in flight (after their headers): 503 past the cap (uvicorn counts the
        # connections too, and compares with >=: one more, so the last connection is served)
        "limit_concurrency": cap + 1,
        "timeout_keep_alive": 5,
        "h11_max_incomplete_event_size": 16 * 1024,  # a request line and headers
        # asyncio accepts up to ``backlog`` connections in one go before any of them is
        # seen by the cap (selector_events._accept_connection): half the cap keeps such a
        # burst, on top of the connections held, inside the descriptors left
        "backlog": max(8, min(2048, cap // 2)),
    }
