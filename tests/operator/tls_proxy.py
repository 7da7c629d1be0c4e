"""TLS in front of a PostgreSQL built without it (the bundled one): the proxy answers the client's
SSLRequest as PostgreSQL does, completes the TLS handshake with the server certificate it was given,
then relays the session to the real server. A client that does not ask for TLS gets PostgreSQL's
own refusal (SQLSTATE 28000), as from a server whose pg_hba.conf has only hostssl lines."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
from pathlib import Path

SSL_REQUEST, GSSENC_REQUEST = 80877103, 80877104


def _refusal(message: str) -> bytes:
    fields = b"".join(
        code + text.encode() + b"\0" for code, text in ((b"S", "FATAL"), (b"C", "28000"), (b"M", message))
    )
    body = fields + b"\0"
    return b"E" + struct.pack("!i", len(body) + 4) + body


class TLSOnlyProxy:
    def __init__(self, backend: tuple[str, int], certificate: Path, key: Path) -> None:
        self._backend = backend
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(certificate, key)
        self._server: asyncio.Server | None = None
        self._sessions: set[asyncio.Task] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._sessions:
            task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._sessions.add(task := asyncio.current_task())  # type: ignore[arg-type]
        try:
            code = await self._negotiate(reader, writer)
            if code != SSL_REQUEST:
                writer.write(_refusal("no pg_hba.conf entry for this connection, no encryption"))
                await writer.drain()
                return
            writer.write(b"S")
            await writer.drain()
            await writer.start_tls(self._context)
            backend_reader, backend_writer = await asyncio.open_connection(*self._backend)
            try:
                await asyncio.gather(_relay(reader, backend_writer), _relay(backend_reader, writer))
            finally:
                backend_writer.close()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            self._sessions.discard(task)  # type: ignore[arg-type]
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    async def _negotiate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        """The code of the client's first message (GSS encryption is declined, as PostgreSQL does)."""
        while True:
            _, code = struct.unpack("!ii", await reader.readexactly(8))
            if code != GSSENC_REQUEST:
                return code
            writer.write(b"N")
            await writer.drain()


async def _relay(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    finally:
        with contextlib.suppress(Exception):
            sink.close()
