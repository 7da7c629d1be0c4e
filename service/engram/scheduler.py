"""Runs forgetting and consolidation for every tenant served, on an interval, inside the service.

On Kubernetes the same jobs also run as a CronJob (`engram forget --tenant X`); running both is
safe: each job only acts on what is due when it runs.
"""

from __future__ import annotations

import asyncio
import logging

from engram.runtime import Engram

log = logging.getLogger(__name__)


async def run_once(engram: Engram) -> None:
    names = [engram.settings.tenant] if engram.settings.tenant else [t.name for t in await engram.tenants.list()]
    for name in names:
        try:
            ctx = await engram.tenants.resolve(name)
            forgotten = await engram.forgetting.run(ctx)
            consolidated = await engram.consolidation.run(ctx)
        except Exception:  # one tenant's failure must not stop the others, nor the service
            log.exception("scheduled lifecycle run failed for tenant %s", name)
            continue
        log.info(
            "lifecycle run for %s: %d forgotten, %d expired, %d purged, %d merged, %d derived",
            name,
            len(forgotten.forgotten),
            len(forgotten.expired),
            len(forgotten.purged),
            len(consolidated.merged),
            len(consolidated.derived),
        )


async def run_forever(engram: Engram, interval_seconds: float) -> None:
    while True:
        await asyncio.sleep(interval_seconds)
        await run_once(engram)
