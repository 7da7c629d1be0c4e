"""The HTTP server as engram runs it: uvicorn with httptools, guarded at the connection. A request
line and headers are capped in bytes (httptools would buffer a 100 MB header whole) and must
arrive within a deadline; a connection that stops sending its body, or stops reading its
response, is closed after an idle timeout. Each is answered once, in engram's error shape."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from engram.settings import Settings


@dataclass(frozen=True)
class ConnectionLimits:
    max_head_bytes: int  # request line + headers
    head_timeout: float  # from a connection's opening, or a request's first byte, to the end of its headers
    idle_timeout: float  # no byte of a body arriving, or of a response taken, for this long

    @property
    def check_every(self) -> float:
        return max(0.05, min(self.head_timeout, self.idle_timeout) / 4)


class _Refused(Exception):
    """Raised in a parser callback to stop parsing a request already answered."""


class GuardedHttpTools(HttpToolsProtocol):
    limits: ClassVar[ConnectionLimits]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._active_at = self.loop.time()
        self._await_head()
        self._watch: asyncio.TimerHandle | None = self.loop.call_later(self.limits.check_every, self._check)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._active_at = self.loop.time()
        if self._reading_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._reading_head and self._head_bytes > self.limits.max_head_bytes:
            self._refuse(431, "too_large", f"the request line and headers hold over {self.limits.max_head_bytes} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_head()
        self._head_size = 0

    def on_url(self, url: bytes) -> None:
        self._head_size += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_size += len(name) + len(value) + 4  # ": " and CRLF
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        if self._head_size > self.limits.max_head_bytes:  # it came whole, in one read
            self._refuse(431, "too_large", f"the request line and headers hold over {self.limits.max_head_bytes} bytes")
            raise _Refused  # the parser stops here; the app never sees the request
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if not self.transport.is_closing():  # a refusal of ours was sent already
            super().send_400_response(msg)

    def resume_writing(self) -> None:
        self._active_at = self.loop.time()  # the client took some of the response
        super().resume_writing()

    def _await_head(self) -> None:
        self._reading_head = True
        self._head_bytes = 0
        self._head_deadline = self.loop.time() + self.limits.head_timeout

    def _check(self) -> None:
        self._watch = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        cycle = self.cycle
        if self._reading_head and now > self._head_deadline:
            return self._refuse(408, "timeout", f"no complete request within {self.limits.head_timeout:g} s")
        body_stalled = cycle is not None and cycle.more_body and not self.flow.read_paused
        taking_nothing = self.flow.write_paused
        if (body_stalled or taking_nothing) and now - self._active_at > self.limits.idle_timeout:
            if cycle is not None and not cycle.response_started:
                return self._refuse(408, "timeout", f"the request stalled for {self.limits.idle_timeout:g} s")
            self.transport.close()  # a response is under way: nothing more can be said
            return None
        self._watch = self.loop.call_later(self.limits.check_every, self._check)
        return None

    def _refuse(self, status: int, code: str, message: str) -> None:
        if self.transport.is_closing():
            return
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()
            return
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        head = [
            b"HTTP/1.1 %d %s\r\n" % (status, reason),
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
        if self.cycle is not None:
            self.cycle.disconnected = True  # what the app still reads ends here


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedHttpTools]:
    return type("GuardedHttpTools", (GuardedHttpTools,), {"limits": limits})


def server_config(app: Any, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration every engram server runs with (`engram serve`, the tests)."""
    limits = ConnectionLimits(
        max_head_bytes=settings.max_header_bytes,
        head_timeout=settings.header_timeout_seconds,
        idle_timeout=settings.idle_timeout_seconds,
    )
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "http": guarded_protocol(limits),
        "limit_concurrency": settings.max_connections,
        "log_config": None,  # uvicorn's loggers write through ours (JSON); the app logs requests
        "access_log": False,
    }
    return uvicorn.Config(app, **(options | overrides))
