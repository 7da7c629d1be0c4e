"""Wiring: settings -> database, embedder, cache -> services. Built once per process."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg

from engram.cache import Cache, build_cache
from engram.domain import tokenize
from engram.domain.dedup import Thresholds
from engram.embedding import Embedders, build_embedder
from engram.errors import ConfigurationError
from engram.judge import Judge, build_judge, build_rewriter
from engram.observability.outages import Outage
from engram.services.access import AccessLog
from engram.services.calibration import shipped_thresholds
from engram.services.consolidation import ConsolidationService
from engram.services.erasure import ErasureService
from engram.services.forgetting import ForgettingService
from engram.services.ingest import IngestService
from engram.services.intake import Intake
from engram.services.memories import MemoryService
from engram.services.reindex import ReindexService
from engram.services.retrieval import RetrievalVectors
from engram.services.search import SearchService
from engram.services.sums import LanguageSums
from engram.services.tenants import TenantService
from engram.services.transfer import TransferService
from engram.services.users import UserService
from engram.services.writes import WriteService
from engram.settings import Settings
from engram.store import control
from engram.store.db import (
    NEAREST_POOL_NAME,
    WALK_THE_INDEX,
    NearestPool,
    create_pool,
    ensure_extensions,
    nearest_share,
)
from engram.store.embedded import EmbeddedPostgres

log = logging.getLogger(__name__)


@dataclass
class Engram:
    settings: Settings
    pool: asyncpg.Pool
    nearest: NearestPool
    sums: LanguageSums
    embedders: Embedders
    cache: Cache
    tenants: TenantService
    writes: WriteService
    memories: MemoryService
    search: SearchService
    judge: Judge
    ingest: IngestService
    forgetting: ForgettingService
    consolidation: ConsolidationService
    reindex: ReindexService
    transfer: TransferService
    users: UserService
    erasure: ErasureService
    intake: Intake
    access: AccessLog
    retrieval: RetrievalVectors  # the second vectors' worker (run by `engram serve`)
    database: Outage  # as requests meet it: one warning when it begins, one line when it ends

    async def close(self) -> None:
        await self.access.close()  # the last uses, before the pool goes
        await self.nearest.close()
        await self.pool.close()
        await self.cache.close()
        self.embedders.close()


def embedded_postgres(settings: Settings) -> EmbeddedPostgres:
    return EmbeddedPostgres(settings.state_dir / "postgres")


@contextlib.contextmanager
def database_url(settings: Settings, *, keep_running: bool = False):
    """The configured database, or the embedded one (started if needed, stopped after unless kept)."""
    if settings.database_url is not None:
        yield settings.database_url.get_secret_value()
        return
    server = embedded_postgres(settings)
    was_running = server.is_running()
    server.start()
    try:
        yield server.dsn(via_socket=True)
    finally:
        if not was_running and not keep_running:
            server.stop()


async def bootstrap_database(dsn: str, environment: str) -> dict[str, list[int]]:
    """`engram migrate`: extensions, control schema, environment label, every tenant schema."""
    await ensure_extensions(dsn)
    conn = await asyncpg.connect(dsn)
    try:
        applied = {"control": await control.migrate_control(conn)}
        label = await control.label_environment(conn, environment)
    finally:
        await conn.close()
    if label != environment:
        raise ConfigurationError(f"this database is labelled {label!r}, not {environment!r}: refusing to migrate it")
    return applied


async def check_environment(pool: asyncpg.Pool, environment: str) -> None:
    """Fail closed when the database serves another environment (or is not labelled at all)."""
    async with pool.acquire() as conn:
        label = await control.read_environment(conn)
    if label is None:
        raise ConfigurationError("the database has no environment label: run `engram migrate` first")
    if label != environment:
        raise ConfigurationError(
            f"the database is labelled {label!r} but this service runs as {environment!r}: refusing to start"
        )


async def open_engram(settings: Settings, dsn: str, *, check: bool = True) -> Engram:
    # The Chinese word dictionary loads beside start-up, not on the first Chinese query.
    threading.Thread(target=tokenize.warm_up, name="engram-warm-up", daemon=True).start()
    embedded = settings.database_url is None
    if embedded and check:  # the embedded database is this process's own: brought up to date on open
        await bootstrap_database(dsn, settings.environment)
    embedder = build_embedder(settings)
    # The budget of connections is shared: a part walks HNSW indexes (store/db.NearestPool).
    nearest_size = nearest_share(settings.pool_max_size)
    ef_search = settings.retrieval.hnsw_ef_search
    main_size = settings.pool_max_size - nearest_size
    database = Outage(logging.getLogger("engram.http"), "database", "answering 503 until it is back")
    pool = await create_pool(
        dsn, min(settings.pool_min_size, main_size), main_size, ef_search=ef_search, connected=database.ended
    )
    nearest = NearestPool(pool, None)
    try:
        if nearest_size:
            floor = min(settings.pool_min_size, nearest_size)
            own = await create_pool(
                dsn, floor, nearest_size, ef_search, WALK_THE_INDEX, NEAREST_POOL_NAME, connected=database.ended
            )
            nearest = NearestPool(pool, own)
        if check:
            await check_environment(pool, settings.environment)
        cache = build_cache(settings.redis_url, settings.cache_ttl_seconds, settings.cache_max_items)
        tenants = TenantService(
            pool, embedder.model_id, embedder.dim, only=settings.tenant, retrieval=settings.retrieval_channel
        )
        if embedded and check:
            await tenants.migrate_all()
        if check:
            await tenants.check_all()
    except BaseException:
        await nearest.close()
        await pool.close()
        embedder.close()
        raise
    embedders = Embedders(settings, embedder)
    thresholds = functools.cache(functools.partial(thresholds_for, settings))
    judge = build_judge(settings)
    sums = LanguageSums(pool)
    retrieval = RetrievalVectors(
        pool, tenants, embedders, settings.tenant, preload=settings.retrieval_channel, on_outage=database.began
    )

    def changed(schema: str) -> None:
        sums.changed(schema)
        retrieval.wake(schema)

    writes = WriteService(
        pool, embedders, judge, thresholds, settings.max_batch_size, settings.max_content_chars, nearest, changed
    )
    access = AccessLog(pool, database)
    access.start()
    memories = MemoryService(pool, writes, access)
    search = SearchService(
        pool,
        nearest,
        sums,
        embedders,
        cache,
        settings.retrieval,
        settings.lifecycle.layer_weights,
        access,
        build_rewriter(settings),
        noise_of=lambda model: thresholds(model).noise,
    )
    return Engram(
        settings=settings,
        pool=pool,
        nearest=nearest,
        embedders=embedders,
        cache=cache,
        tenants=tenants,
        writes=writes,
        memories=memories,
        sums=sums,
        search=search,
        judge=judge,
        ingest=IngestService(writes, judge),
        forgetting=ForgettingService(pool, memories, judge, settings.lifecycle),
        consolidation=ConsolidationService(pool, writes, judge, thresholds),
        reindex=ReindexService(pool, embedders),
        transfer=TransferService(pool, embedders, writes, access, settings.max_batch_size, changed),
        users=UserService(pool, tenants),
        erasure=ErasureService(pool, tenants, writes, search, cache),
        intake=Intake(settings.tenant_intake_bytes_per_second, settings.max_body_bytes),
        access=access,
        retrieval=retrieval,
        database=database,
    )


async def exempt_startup_objects() -> None:
    """Take what start-up loaded (the word dictionary, the model's vocabulary, modules) out of the
    garbage collector's view, once it is loaded. A full collection walked all of it, about 200,000
    objects, in ~100 ms with the event loop stopped, every few seconds under load: each stopped
    the searches in flight (150-200 ms instead of 15). Long-running servers call this once."""
    await asyncio.to_thread(tokenize.warm_up)  # waits for the dictionary if it is still loading
    gc.collect()  # what start-up left as garbage is freed, not kept forever
    gc.freeze()


def thresholds_for(settings: Settings, model: str) -> Thresholds:
    """Configured thresholds, else the calibrated ones of the model, else conservative ones."""
    lifecycle = settings.lifecycle
    calibrated = shipped_thresholds().get(model)
    if calibrated is None:
        log.warning("no calibrated dedup thresholds for %s: using 0.97/0.90; run `engram calibrate`", model)
        calibrated = Thresholds(touch=0.97, judge=0.90)  # wide view: judge - 0.1
    return Thresholds(
        touch=lifecycle.touch_threshold if lifecycle.touch_threshold is not None else calibrated.touch,
        judge=lifecycle.judge_threshold if lifecycle.judge_threshold is not None else calibrated.judge,
        noise=calibrated.noise,
        wide=calibrated.wide,
    )


@contextlib.asynccontextmanager
async def engram_session(settings: Settings, dsn: str, *, check: bool = True) -> AsyncIterator[Engram]:
    engram = await open_engram(settings, dsn, check=check)
    try:
        yield engram
    finally:
        await engram.close()
