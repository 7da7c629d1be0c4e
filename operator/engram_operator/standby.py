"""What a candidate operator does while it waits for the Lease: it answers its liveness probe (it is
alive, only not acting; a probe failing there would restart it for nothing) and stops at once on
SIGTERM or SIGINT. Once it holds the Lease, kopf serves the probe and handles the signals."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Coroutine
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.asynccontextmanager
async def standby_liveness(endpoint: str | None) -> AsyncIterator[None]:
    """Serve ``endpoint`` (kopf's form: http://0.0.0.0:8080/healthz) with 200 until the block ends."""
    if endpoint is None:
        yield
        return
    url = urlsplit(endpoint)

    async def alive(_: web.Request) -> web.Response:
        return web.json_response({"standby": True})

    app = web.Application()
    app.router.add_get(url.path or "/", alive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, url.hostname, url.port or 80).start()
    try:
        yield
    finally:
        await runner.cleanup()  # the port is free for kopf's own probe


async def until_signalled(work: Coroutine[Any, Any, None]) -> bool:
    """Run ``work``; True when it finished, False when a stopping signal came first (it is cancelled)."""
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()
    for sig in STOPPING_SIGNALS:
        loop.add_signal_handler(sig, signalled.set)
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(signalled.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig in STOPPING_SIGNALS:
            loop.remove_signal_handler(sig)
        waiter.cancel()
    if task.done():
        task.result()
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False
