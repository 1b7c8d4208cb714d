"""uvicorn's h11 protocol with deadlines for what no app is waiting to read.

uvicorn bounds the wait *between* requests on a kept-alive connection
(``timeout_keep_alive``), but each byte that arrives cancels that wait, and
nothing bounds the time a client may take to send a request line and its
headers: a client that opens connections and trickles half a request line into
each holds them for ever. Nor does anything bound a body that keeps arriving
after the app has answered without reading it (a 404, a 415, a 413 decided
from Content-Length).

This protocol gives each request's line and headers `header_timeout` seconds
from its first byte (from the connection's opening for the first request); a
client still sending them then gets a 408 ``read_timeout`` and the connection
is closed, and a connection that sent nothing is closed. A body still arriving
`header_timeout` seconds after its answer was sent is cut off too. The body an
app reads has its own deadline in the app (`read_body`), where a JSON error can
say how much arrived.

A request line and headers over HEAD_LIMIT (16 KiB) are a 431
``headers_too_large``, however they arrive: h11's own bound applies only to a
head still incomplete, so one sent in a single piece would pass it.

uvicorn is imported when this module is, so only `run` imports it.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from solvi.serve._requests import counted

__all__ = ["HEAD_LIMIT", "header_deadline_protocol"]

#: The most bytes a request line and its headers may take (h11's own bound, 16 KiB).
HEAD_LIMIT = 16 * 1024
#: The blank line that ends a request's head (h11 takes a bare LF as well as CRLF).
_HEAD_END = re.compile(rb"\r?\n\r?\n")


def _error_response(status: str, code: str, message: str, limit: float | None = None) -> bytes:
    """A JSON error that closes the connection, for what is refused before any app runs."""
    error: dict[str, Any] = {"code": code, "message": message}
    if limit is not None:
        error["limit"] = limit
    body = json.dumps({"error": error}, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def _invalid_response() -> bytes:
    message = (
        "the request is not valid HTTP/1.1 (a malformed request line, header, "
        "Content-Length or chunk); send a well-formed request"
    )
    return _error_response("400 Bad Request", "invalid_request", message)


def _timeout_response(seconds: float) -> bytes:
    message = (
        f"the request line and headers did not arrive within {counted(seconds, 'second')}; "
        f"send the whole request at once, or start the server with a larger --read-timeout"
    )
    return _error_response("408 Request Timeout", "read_timeout", message, seconds)


def _head_too_large_response(limit: int) -> bytes:
    message = (
        f"the request line and headers are over {counted(limit, 'byte')}; send fewer or "
        f"shorter headers"
    )
    return _error_response(
        "431 Request Header Fields Too Large", "headers_too_large", message, limit
    )


def _head_size(buffered: bytes, limit: int) -> int:
    """The bytes of the request head at the start of `buffered`, or of it all if unfinished."""
    end = _HEAD_END.search(buffered, 0, limit + 4)
    return end.end() if end is not None else len(buffered)


class _HeaderDeadline(H11Protocol):
    """An h11 connection that gives a client `header_timeout` seconds for what it must send."""

    header_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._unattended():
            if self._deadline is None:
                self._start()  # the first bytes of a later request on a kept-alive connection
        else:
            self._stop()  # the headers are in, and the app reads the body

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._unattended() and self._deadline is None:
            self._start()  # the answer is out, and the body it did not read is still coming

    def handle_events(self) -> None:
        """Refuse a head over HEAD_LIMIT before h11 parses it.

        h11 bounds only a head that arrives in pieces (its
        ``max_incomplete_event_size``); one sent whole is parsed at any size.
        """
        if self.conn.their_state is h11.IDLE:
            pending, _ = self.conn.trailing_data
            if _head_size(pending, HEAD_LIMIT) > HEAD_LIMIT:
                self._stop()
                self.transport.write(_head_too_large_response(HEAD_LIMIT))
                self.transport.close()
                return
        super().handle_events()

    def send_400_response(self, msg: str) -> None:
        """What h11 cannot parse gets solvi's JSON error, not uvicorn's plain text."""
        self._stop()
        self.transport.write(_invalid_response())
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _unattended(self) -> bool:
        """Whether the client is sending what no app is reading: headers, or an answered body."""
        theirs, ours = self.conn.their_state, self.conn.our_state
        answered = ours is h11.DONE or ours is h11.MUST_CLOSE
        return theirs is h11.IDLE or (theirs is h11.SEND_BODY and answered)

    def _start(self) -> None:
        if not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.header_timeout, self._too_slow)

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or not self._unattended():
            return
        pending, _ = self.conn.trailing_data
        if self.conn.their_state is h11.IDLE and pending:
            self.transport.write(_timeout_response(self.header_timeout))
        self.transport.close()


def header_deadline_protocol(seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, with `seconds` for each request's line and headers.

    Pass it as ``uvicorn.run(app, http=header_deadline_protocol(10.0))``.
    """
    return type("HeaderDeadlineProtocol", (_HeaderDeadline,), {"header_timeout": seconds})
