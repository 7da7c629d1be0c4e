"""Each tenant's fair share of the intake: the request bytes it may send per second, with a burst
of one largest batch. A tenant over its share waits its turn (the time its bytes are worth), or,
with more than a few seconds to wait, is told to come back (429): one tenant flooding the service
with bodies to parse leaves the loop to the others."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable

from engram.errors import TooManyRequests

# A request costs its body and at least this much (a flood of empty requests costs too).
MIN_COST = 1024
MAX_WAIT_SECONDS = 5.0
TRACKED = 10_000  # tenants remembered at once; the longest idle is forgotten first


class Intake:
    def __init__(
        self, bytes_per_second: float, burst_bytes: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = bytes_per_second
        self._burst = burst_bytes
        self._clock = clock
        self._balances: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tenant -> (bytes, at)

    def charge(self, tenant: str, size: int) -> float:
        """Debit the tenant ``size`` bytes; the seconds it must wait before it is served. Raises
        TooManyRequests (and debits nothing) when that would be more than MAX_WAIT_SECONDS."""
        now = self._clock()
        balance, at = self._balances.pop(tenant, (self._burst, now))
        balance = min(self._burst, balance + (now - at) * self._rate)
        cost = max(size, MIN_COST)
        wait = max(0.0, (cost - balance) / self._rate)
        if wait > MAX_WAIT_SECONDS:
            self._keep(tenant, balance, now)
            raise TooManyRequests(
                f"tenant {tenant!r} is sending more than its share ({self._rate / 2**20:g} MiB/s): slow down",
                retry_after_seconds=int(wait) + 1,
            )
        self._keep(tenant, balance - cost, now)
        return wait

    async def admit(self, tenant: str, size: int) -> None:
        """Wait the tenant's turn for a request of ``size`` bytes (see charge)."""
        wait = self.charge(tenant, size)
        if wait > 0:
            await asyncio.sleep(wait)

    def _keep(self, tenant: str, balance: float, at: float) -> None:
        self._balances[tenant] = (balance, at)
        while len(self._balances) > TRACKED:
            self._balances.popitem(last=False)
