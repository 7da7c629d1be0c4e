"""The second vector channel's worker: every memory also gets a vector of the retrieval model
(domain/embedders.py RETRIEVAL_MODEL), made after its write is acknowledged.

The queue is the memories table itself (a NULL second vector, store/retrieval.py), so it survives
restarts and crashes and sees imports and restores like any write. Every process that serves a
tenant works its queue; a per-tenant advisory lock keeps two processes off the same batch, and a
vector is stored only if its memory still holds the text it was made from. The model runs on a
thread of the lowest priority (embedding/base.py embed_when_idle), but a thread's priority does
not reach PostgreSQL (Linux groups a session's processes: another session's database backends
share the CPU with this process as a whole), so the worker also waits while requests are being
served, a small batch at a time: under load its lag grows, not the requests' latency, and a
sustained load defers it up to DEFER_LIMIT.

A write in this process wakes the worker for its tenant; every SWEEP_SECONDS it also looks at every
tenant (another process's writes, an import, a crash's leftovers). Until a memory has its second
vector the first channel finds it: a memory is searchable the moment it is acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import asyncpg

from engram.domain.embedders import RETRIEVAL_MODEL, RetrievalChoice, RetrievalStatus
from engram.domain.tenancy import TenantContext
from engram.embedding import Embedders
from engram.errors import Forbidden, NotFound
from engram.observability import metrics
from engram.services.slices import ACTIVITY
from engram.services.tenants import TenantService
from engram.store import retrieval as store
from engram.store import tenant_meta
from engram.store.db import unreachable
from engram.store.retrieval import Backlog

log = logging.getLogger(__name__)

BATCH = 16  # memories embedded at a time: a request that arrives meanwhile shares the CPU this long
SWEEP_SECONDS = 30.0  # every tenant looked at, at least this often
QUIET_SECONDS = 0.05  # a batch starts once no request was served for this long...
POLL_SECONDS = 0.01
DEFER_LIMIT = 30.0  # ...or after this long, so a steady load defers it but never stops it


class RetrievalVectors:
    def __init__(
        self,
        pool: asyncpg.Pool,
        tenants: TenantService,
        embedders: Embedders,
        only: str | None = None,
        preload: bool = False,
        batch: int = BATCH,
        on_outage: Callable[[BaseException], None] = lambda exc: None,
    ) -> None:
        self._pool = pool
        self._tenants = tenants
        self._embedders = embedders
        self._only = only  # the one tenant this process serves, if so
        self._preload = preload  # the service's default is on: the model is loaded at start
        self._batch = batch
        self._on_outage = on_outage
        self._due: set[str] = set()  # schemas written to in this process since their last round
        self._seen: dict[str, Backlog] = {}  # tenant -> its backlog when last looked at
        self.embedded = 0  # texts this process embedded (one embedded twice shows as waste)
        self._wake = asyncio.Event()

    def wake(self, schema: str) -> None:
        """A tenant's memories changed in this process: its new ones wait for their vectors."""
        self._due.add(schema)
        self._wake.set()

    async def work(self, ctx: TenantContext, budget: int | None = None) -> int:
        """Give the tenant's waiting memories their second vectors, a batch at a time, until none
        wait (or ``budget`` are stored); returns how many were stored."""
        if not ctx.retrieval:
            return 0
        embedder = await self._embedders.load(RETRIEVAL_MODEL)
        stored = 0
        while budget is None or stored < budget:
            await _let_requests_pass()
            async with self._pool.acquire() as conn:
                lock = f"retrieval:{ctx.schema}"
                if not await conn.fetchval("SELECT pg_try_advisory_lock(hashtext($1))", lock):
                    break  # another process is working this tenant's queue
                try:
                    batch = await store.waiting(conn, ctx.schema, self._batch)
                    if not batch:
                        break
                    vectors = await embedder.embed_when_idle([w.content for w in batch])
                    self.embedded += len(batch)
                    done = await store.store(conn, ctx.schema, list(zip(batch, vectors, strict=True)))
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(hashtext($1))", lock)
            stored += done
            metrics.retrieval_vectors.labels(ctx.name).inc(done)
            if not done:  # every one changed while it was embedded: the next round reads them anew
                break
        return stored

    async def backlog(self, ctx: TenantContext) -> Backlog:
        """What waits (nothing, for a tenant without the channel), also set in /metrics."""
        async with self._pool.acquire() as conn:
            found = await store.backlog(conn, ctx.schema) if ctx.retrieval else Backlog(0, None)
        metrics.retrieval_backlog.labels(ctx.name).set(found.pending)
        metrics.retrieval_lag.labels(ctx.name).set(found.lag_seconds())
        self._seen[ctx.name] = found
        return found

    def summary(self) -> dict[str, float | bool]:
        """Every tenant's backlog as last seen (no query: /readyz says it on every probe), and
        whether the model is loaded (searches use the channel once it is)."""
        seen = list(self._seen.values())
        return {
            "pending": sum(b.pending for b in seen),
            "lag_seconds": round(max((b.lag_seconds() for b in seen), default=0.0), 1),
            "model_loaded": self._embedders.is_loaded(RETRIEVAL_MODEL),
        }

    async def status(self, ctx: TenantContext) -> RetrievalStatus:
        async with self._pool.acquire() as conn:
            chosen = await tenant_meta.read_retrieval_choice(conn, ctx.schema)
        found = await self.backlog(ctx)
        return RetrievalStatus(
            model=RETRIEVAL_MODEL,
            enabled=ctx.retrieval,
            chosen=chosen,
            pending=found.pending,
            lag_seconds=round(found.lag_seconds(), 1),
        )

    async def choose(self, ctx: TenantContext, choice: RetrievalChoice) -> RetrievalStatus:
        """The tenant turns the channel on or off, or back to the service's default. Turned off,
        searches stop using it and no new vectors are made; the ones made stay, for turning it on
        again. Needs the tenant's key (not a user's)."""
        if ctx.user is not None:
            raise Forbidden(f"a key acting for user {ctx.user!r} cannot change the tenant's channels", field="user_id")
        async with self._pool.acquire() as conn:
            await tenant_meta.write_retrieval_choice(conn, ctx.schema, choice.enabled)
        self._tenants.forget(ctx.name)  # this process sees the choice at once, others within seconds
        now = await self._tenants.resolve(ctx.name)
        self.wake(now.schema)
        return await self.status(now)

    async def requeue(self, ctx: TenantContext) -> int:
        """Every second vector of the tenant made again (after a model upgrade, or to check)."""
        async with self._pool.acquire() as conn:
            queued = await store.requeue(conn, ctx.schema)
        self.wake(ctx.schema)
        return queued

    async def run_forever(self) -> None:
        if self._preload:
            await self._embedders.load(RETRIEVAL_MODEL)  # on a thread; searches go without it meanwhile
        swept = 0.0
        while True:
            try:
                if time.monotonic() - swept >= SWEEP_SECONDS:
                    await self._round(await self._every_tenant())
                    swept = time.monotonic()
                elif self._due:
                    await _let_requests_pass()  # the writes that woke it first, and a batch of them
                    due, self._due = self._due, set()
                    await self._round([c for c in await self._every_tenant() if c.schema in due])
                else:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), SWEEP_SECONDS - (time.monotonic() - swept))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database may be down a while: the queue waits in it
                if unreachable(exc):
                    self._on_outage(exc)
                else:
                    log.exception("second vectors: a round failed")
                await asyncio.sleep(1.0)

    async def _every_tenant(self) -> list[TenantContext]:
        contexts = []
        names = [self._only] if self._only else [t.name for t in await self._tenants.list()]
        for name in names:
            try:
                contexts.append(await self._tenants.resolve(name))
            except NotFound:
                continue  # dropped meanwhile
        return contexts

    async def _round(self, contexts: list[TenantContext]) -> None:
        """Each tenant's queue, a few batches at a time in turn, until every one is empty."""
        waiting = [c for c in contexts if c.retrieval and (await self.backlog(c)).pending]
        while waiting:
            again = []
            for ctx in waiting:
                if await self.work(ctx, budget=self._batch * 4) >= self._batch * 4:
                    again.append(ctx)
                else:
                    await self.backlog(ctx)
            waiting = again


async def _let_requests_pass() -> None:
    """Wait until no request was served for a moment (polled: the requests may be another loop's)."""
    deadline = time.monotonic() + DEFER_LIMIT
    while not ACTIVITY.quiet_for(QUIET_SECONDS) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(POLL_SECONDS)
