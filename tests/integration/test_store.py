"""Migrations and schema guarantees on the real database."""

import asyncio
import os

import asyncpg
import pytest

from engram.domain.models import Kind, NewMemory
from engram.domain.search import SearchRequest
from engram.domain.tenancy import schema_name
from engram.runtime import engram_session
from engram.services.writes import derived_columns
from engram.store import memories as repo
from engram.store.db import NEAREST_POOL_NAME, NearestPool, _init_connection
from engram.store.memories import MemoryRow
from engram.store.migrate import load_migrations, migrate_schema
from tests.conftest import unique_tenant


async def test_migrations_are_recorded_and_idempotent(engram, tenant):
    ctx, _ = tenant
    async with engram.pool.acquire() as conn:
        versions = [r["version"] for r in await conn.fetch(f"SELECT version FROM {ctx.schema}.schema_migrations")]
        assert versions == [m.version for m in load_migrations("tenant")]
        assert await migrate_schema(conn, ctx.schema, "tenant", ctx.embedding_dim) == []


async def test_tenant_schema_has_vector_and_text_indexes(engram, tenant):
    ctx, _ = tenant
    async with engram.pool.acquire() as conn:
        indexes = {
            r["indexname"]: r["indexdef"]
            for r in await conn.fetch(
                "SELECT indexname, indexdef FROM pg_catalog.pg_indexes WHERE schemaname = $1",
                ctx.schema.strip('"'),
            )
        }
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["memories_embedding_hnsw"]
    assert "USING gin (search_tokens)" in indexes["memories_search_tokens"]
    assert "UNIQUE" in indexes["memories_dedup_active"]


async def test_unqualified_table_names_fail_at_run_time(engram, tenant):
    async with engram.pool.acquire() as conn:
        with pytest.raises(asyncpg.UndefinedTableError):
            await conn.fetch("SELECT 1 FROM memories")


async def test_each_tenant_has_its_own_schema(engram):
    a, _ = await engram.tenants.create("iso-a-" + __import__("uuid").uuid4().hex[:6])
    b, _ = await engram.tenants.create("iso-b-" + __import__("uuid").uuid4().hex[:6])
    assert a.schema != b.schema
    async with engram.pool.acquire() as conn:
        for ctx in (a, b):
            assert await conn.fetchval(f"SELECT count(*) FROM {ctx.schema}.memories") == 0


async def test_a_whole_database_dump_of_ten_thousand_tenants_fits_the_lock_table(engram, tenant, pg_dsn):
    """pg_dump locks every table in one transaction: the embedded server's shared lock table
    (max_locks_per_transaction x backend slots) must hold the tables of 10,000 tenants."""
    if os.environ.get("ENGRAM_TEST_DATABASE_URL"):
        pytest.skip("the lock table is sized by the embedded server; this database is configured elsewhere")
    ctx, _ = tenant
    async with engram.pool.acquire() as conn:
        tables = await conn.fetchval(
            """SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')""",
            schema_name(ctx.name),
        )
        shared = await conn.fetchval(
            """SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname NOT LIKE 'tenant%' AND n.nspname NOT LIKE 'pg\\_%' AND c.relkind IN ('r', 'p')"""
        )
        setting = {
            name: int(await conn.fetchval(f"SHOW {name}"))
            for name in (
                "max_locks_per_transaction", "max_connections", "autovacuum_worker_slots",
                "max_worker_processes", "max_wal_senders", "max_prepared_transactions",
            )
        }  # fmt: skip
    slots = sum(value for name, value in setting.items() if name != "max_locks_per_transaction") + 1
    assert setting["max_locks_per_transaction"] * slots >= 10_000 * tables + shared, (tables, setting)


async def test_slot_mates_are_read_newest_first_from_their_index(engram, tenant, bootstrapped):
    """A slot holding many active facts (an import, a bulk load): a write reads the newest few from
    the index, not every one sorted with its vector (tenant migration 0007)."""
    ctx, _ = tenant
    await engram.writes.write_batch(ctx, [NewMemory(content=f"Reading note {i}: chapter {i}") for i in range(300)])
    async with engram.pool.acquire() as conn:
        await conn.execute(f"UPDATE {ctx.schema}.memories SET slot = 'user|beverage'")
        await conn.execute(f"ANALYZE {ctx.schema}.memories")
    content = "The user drinks green tea every morning"
    vector = await engram.embedders.default.embed_query(content)
    derived = derived_columns(content, Kind.fact, "long_term", None, vector, engram.embedders.default.model_id, None)
    row = MemoryRow(
        content=content, kind="fact", type="preference", layer="long_term", source=None, external_id=None,
        importance=0.5, occurred_at=None, session_id=None, task_id=None, tags=[], metadata={},
        **derived | {"slot": "user|beverage"},
    )  # fmt: skip
    conn = await asyncpg.connect(bootstrapped)  # its own session: the plan is logged to it
    try:
        await _init_connection(conn)  # the pool's codecs
        plans: list[str] = []
        conn.add_log_listener(lambda _, message: plans.append(message.message))
        try:
            await conn.execute("LOAD 'auto_explain'")
        except asyncpg.InsufficientPrivilegeError:
            pytest.skip("loading auto_explain needs a superuser (ENGRAM_TEST_DATABASE_URL is not one)")
        await conn.execute("SET auto_explain.log_min_duration = 0; SET auto_explain.log_level = notice")
        mates = await repo.active_in_slots(conn, ctx.schema, [row], 8)
    finally:
        await conn.close()
    assert len(mates[0]) == 8
    [plan] = [p for p in plans if f"FROM {ctx.schema}.memories m" in p]  # not asyncpg's introspection
    assert "memories_slot_newest" in plan and "Sort" not in plan, plan


async def test_the_vector_channel_walks_the_hnsw_index(engram, tenant):
    """The planner does not price out-of-line vectors and would rather scan and sort every row; the
    nearest-neighbour connections make it walk the index (store/db.py, NearestPool): their own,
    set up to, or the main pool's in a transaction when the budget is too small to share."""
    ctx, _ = tenant
    items = [NewMemory(content=f"Reading note {i}: chapter {i} of book {i * 7}") for i in range(300)]
    await engram.writes.write_batch(ctx, items)
    query = await engram.embedders.default.embed_query("which chapter")
    explain = (
        f"EXPLAIN SELECT m.id FROM {ctx.schema}.memories m WHERE m.status = 'active' "
        "ORDER BY m.embedding <=> $1 LIMIT 20"
    )
    async with engram.pool.acquire() as conn, conn.transaction():
        await conn.execute(f"ANALYZE {ctx.schema}.memories")
        plain = "\n".join(r[0] for r in await conn.fetch(explain, query))
    plans = {}
    for name, nearest in (("own", engram.nearest), ("shared", NearestPool(engram.pool, None))):
        async with nearest.acquire() as conn:
            plans[name] = "\n".join(r[0] for r in await conn.fetch(explain, query))
    assert "memories_embedding_hnsw" not in plain  # what the planner picks by itself
    assert all("memories_embedding_hnsw" in plan for plan in plans.values()), plans
    async with engram.pool.acquire() as conn:  # the main pool's sessions plan as usual
        assert await conn.fetchval("SHOW enable_seqscan") == "on"
    await engram.search.search(ctx, SearchRequest(query="which chapter of the book"))
    async with engram.pool.acquire() as conn:  # the statement each session ran last
        last = await conn.fetch(
            "SELECT application_name, query FROM pg_stat_activity WHERE datname = current_database()"
        )
    # Either vector channel's walk (a session that ran the first may have run the second after it).
    walks = [f"SELECT m.id, 1 - (m.{column} <=> $1) AS score" for column in ("embedding", "retrieval_embedding")]
    assert {r["application_name"] for r in last if r["query"].startswith(tuple(walks))} == {NEAREST_POOL_NAME}


@pytest.mark.parametrize("budget", [1, 2, 3, 10])
async def test_the_connections_for_nearest_neighbours_come_out_of_the_budget(settings, bootstrapped, budget):
    """spec.database.poolSize (the tenant role's connection limit is sized on it) bounds both pools."""
    async with engram_session(settings.model_copy(update={"pool_max_size": budget}), bootstrapped) as engram:
        own = engram.nearest.get_max_size()
        assert engram.pool.get_max_size() + own == budget
        assert own == (budget // 3)
        ctx, _ = await engram.tenants.create(unique_tenant("budget"))
        facts = ["The user's locker code is 4711", "The user's locker code is 4712", "The user owns a red bike"]
        async with asyncio.timeout(60):  # a write must not wait for a second connection of a budget of one
            results = await asyncio.gather(*(engram.writes.write(ctx, NewMemory(content=f)) for f in facts))
        assert len(results) == 3


async def test_a_pool_floor_above_the_main_pools_share_still_opens(settings, bootstrapped):
    update = {"pool_min_size": 10, "pool_max_size": 10}
    async with engram_session(settings.model_copy(update=update), bootstrapped) as engram:
        assert engram.pool.get_max_size() == 7
