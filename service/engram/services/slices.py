"""CPU work in slices: a long stretch of pure work (deciding a 500-item batch, reading its
texts) gives the event loop back every couple of milliseconds, and while other requests are in
flight it rests a little after each slice, so another tenant's search waits a slice, not the
batch, and takes its every step between two slices."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Iterator

SLICE_SECONDS = 0.002
REST_SECONDS = 0.006


class _Request:
    __slots__ = ("bulk",)

    def __init__(self) -> None:
        self.bulk = False


_current: contextvars.ContextVar[_Request | None] = contextvars.ContextVar("engram_request", default=None)


class Activity:
    """The requests in flight in this process, and which of them do bulk work in slices."""

    def __init__(self) -> None:
        self._serving: set[_Request] = set()
        self._last = 0.0  # when a request last began or ended (monotonic)

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        request = _Request()
        self._serving.add(request)
        self._last = time.monotonic()
        token = _current.set(request)
        try:
            yield
        finally:
            _current.reset(token)
            self._serving.discard(request)
            self._last = time.monotonic()

    def mark_bulk(self) -> None:
        request = _current.get()
        if request is not None:
            request.bulk = True

    def others_waiting(self) -> bool:
        """Whether a request that is not bulk work is being served."""
        return any(not r.bulk for r in self._serving)

    def quiet_for(self, seconds: float) -> bool:
        """No request but bulk work is being served, and none began or ended for ``seconds``:
        a client sending one request after another leaves gaps of a millisecond, not this."""
        return not self.others_waiting() and time.monotonic() - self._last >= seconds


ACTIVITY = Activity()


class Slices:
    def __init__(self, seconds: float = SLICE_SECONDS, rest: float = REST_SECONDS) -> None:
        self._seconds = seconds
        self._rest = rest
        self._since = time.perf_counter()

    async def tick(self) -> None:
        """Between two steps of the work: yield if this slice is used up, resting a little if
        other requests are being served."""
        if time.perf_counter() - self._since < self._seconds:
            return
        ACTIVITY.mark_bulk()  # the request doing this is bulk work from its first full slice on
        await asyncio.sleep(self._rest if ACTIVITY.others_waiting() else 0)
        self._since = time.perf_counter()
