"""Runs forgetting and consolidation for every tenant served, on a schedule, inside the service.

The schedule (weekly by default) is kept per tenant in the database: a run is due when the last
one is older than the interval, so restarts neither skip it nor repeat it. On Kubernetes the same
jobs also run as a CronJob (`engram forget --tenant X`); running both is safe: each job only acts
on what is due when it runs.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from engram.domain.tenancy import TenantContext
from engram.runtime import Engram
from engram.store import tenant_meta
from engram.store.db import unreachable

log = logging.getLogger(__name__)
# How often the service looks for tenants whose run is due.
CHECK_SECONDS = 600.0


async def _tenant_names(engram: Engram) -> list[str]:
    return [engram.settings.tenant] if engram.settings.tenant else [t.name for t in await engram.tenants.list()]


async def run_tenant(engram: Engram, ctx: TenantContext, now: datetime | None = None) -> None:
    """Forgetting then consolidation for one tenant, recorded as done."""
    now = now or datetime.now(UTC)
    forgotten = await engram.forgetting.run(ctx, now=now)
    consolidated = await engram.consolidation.run(ctx)
    async with engram.pool.acquire() as conn:
        await tenant_meta.record_lifecycle_run(conn, ctx.schema, now)
    log.info(
        "lifecycle run for %s: %d forgotten, %d expired, %d purged, %d merged, %d derived",
        ctx.name,
        len(forgotten.forgotten),
        len(forgotten.expired),
        len(forgotten.purged),
        len(consolidated.merged),
        len(consolidated.derived),
    )


async def run_once(engram: Engram, interval: timedelta | None = None, now: datetime | None = None) -> list[str]:
    """Every tenant whose run is due (all of them without an interval); returns the tenants run."""
    now = now or datetime.now(UTC)
    ran = []
    for name in await _tenant_names(engram):
        try:
            ctx = await engram.tenants.resolve(name)
            if interval is not None:
                async with engram.pool.acquire() as conn:
                    last = await tenant_meta.lifecycle_ran_at(conn, ctx.schema)
                if last is not None and now - last < interval:
                    continue
            await run_tenant(engram, ctx, now)
            ran.append(ctx.name)
        except Exception as exc:  # one tenant's failure must not stop the others, nor the service
            if not unreachable(exc):
                log.exception("scheduled lifecycle run failed for tenant %s", name)
                continue
            engram.database.began(exc)  # the outage, said once: not a traceback per tenant
            log.debug("lifecycle run for %s left for the next check: the database is out of reach", name)
    return ran


async def run_forever(engram: Engram, interval_seconds: float) -> None:
    interval = timedelta(seconds=interval_seconds)
    while True:
        try:
            await run_once(engram, interval)
        except Exception as exc:  # the database may be down for a while: try again at the next check
            if unreachable(exc):
                engram.database.began(exc)
            else:
                log.exception("scheduled lifecycle check failed")
        await asyncio.sleep(min(CHECK_SECONDS, interval_seconds))
