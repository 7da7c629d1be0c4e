"""Write, read, update, forget, restore, purge over the real database."""

import asyncio
import uuid

import asyncpg
import pytest

from engram.domain.models import Layer, MemoryFilter, MemoryPatch, MemoryType, NewMemory, Status, WriteOutcome
from engram.domain.search import SearchRequest
from engram.errors import Conflict, InvalidInput, NotFound
from engram.runtime import engram_session
from tests.conftest import unique_tenant


async def test_write_computes_language_and_identifiers_and_history(engram, tenant):
    ctx, _ = tenant
    result = await engram.writes.write(
        ctx,
        NewMemory(content="  用户的订单12345延误了 ", type=MemoryType.event, tags=["order"]),
        actor="test",
    )
    memory = result.memory
    assert result.outcome == WriteOutcome.created
    assert memory.content == "用户的订单12345延误了"
    assert memory.language == "zh" and memory.embedding_model == "use-multilingual-v3"
    assert memory.status == Status.active and memory.mentions == 1
    assert memory.access_count == 0 and memory.last_accessed_at is None  # not yet returned to an agent
    events = await engram.memories.history(ctx, memory.id)
    assert [(e.event, e.actor, e.content) for e in events] == [("written", "test", memory.content)]


async def test_exact_duplicate_returns_the_existing_memory(engram, tenant):
    ctx, _ = tenant
    first = await engram.writes.write(ctx, NewMemory(content="I like coffee"))
    again = await engram.writes.write(ctx, NewMemory(content="i like   COFFEE"))
    assert again.outcome == WriteOutcome.duplicate and again.memory.id == first.memory.id


async def test_sixteen_concurrent_writers_of_one_fact_leave_one_memory(engram, tenant):
    ctx, _ = tenant
    results = await asyncio.gather(
        *(engram.writes.write(ctx, NewMemory(content="The user's passport number is E1234567")) for _ in range(16))
    )
    assert {r.memory.id for r in results} == {results[0].memory.id}
    assert sum(r.outcome == WriteOutcome.created for r in results) == 1
    page = await engram.memories.list(ctx, MemoryFilter())
    assert len(page.items) == 1


async def test_writes_waiting_for_the_tenants_lock_leave_the_pool_to_searches(settings, bootstrapped):
    # Eight writes wait while another process holds the tenant's write lock; the pool has four
    # connections. Waiting in the database, each write held one and the search had none left.
    async with engram_session(settings.model_copy(update={"pool_max_size": 4}), bootstrapped) as small:
        ctx, _ = await small.tenants.create(unique_tenant("turns"))
        await small.writes.write(ctx, NewMemory(content="The user's locker code is 4711"))
        other = await asyncpg.connect(bootstrapped)
        try:
            async with other.transaction():
                await other.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"{ctx.schema}.writes")
                writes = [
                    asyncio.create_task(small.writes.write(ctx, NewMemory(content=f"The user visited city number {i}")))
                    for i in range(8)
                ]
                await asyncio.sleep(0.5)  # the writes reach the lock (a slower start only makes this pass)
                found = await asyncio.wait_for(small.search.search(ctx, SearchRequest(query="locker code")), 60)
                assert "4711" in found.hits[0].memory.content
                assert not any(w.done() for w in writes)  # still waiting: the search did not wait for them
        finally:
            await other.close()
        assert all(r.outcome == WriteOutcome.created for r in await asyncio.gather(*writes))


async def test_batch_keeps_order_and_external_ids(engram, tenant):
    ctx, _ = tenant
    items = [NewMemory(content=f"fact number {i}", external_id=f"ext-{i}") for i in range(5)]
    items.append(NewMemory(content="fact number 2", external_id="ext-dup"))
    results = await engram.writes.write_batch(ctx, items)
    assert [r.external_id for r in results] == [*(f"ext-{i}" for i in range(5)), "ext-dup"]
    assert results[-1].outcome == WriteOutcome.duplicate and results[-1].memory.id == results[2].memory.id


async def test_invalid_writes_store_nothing(engram, tenant):
    ctx, _ = tenant
    with pytest.raises(InvalidInput):
        await engram.writes.write_batch(ctx, [NewMemory(content="ok"), NewMemory(content="   ")])
    with pytest.raises(InvalidInput, match="session_id"):
        await engram.writes.write(ctx, NewMemory(content="tired today", layer=Layer.session))
    with pytest.raises(InvalidInput, match="limit"):
        await engram.writes.write(ctx, NewMemory(content="x" * 9000))
    assert (await engram.memories.list(ctx, MemoryFilter())).items == []


async def test_list_pages_and_filters(engram, tenant):
    ctx, _ = tenant
    for i in range(7):
        kind = MemoryType.preference if i % 2 else MemoryType.fact
        await engram.writes.write(ctx, NewMemory(content=f"memory {i}", type=kind, tags=["t"] if i < 3 else []))
    seen, cursor = [], None
    while True:
        page = await engram.memories.list(ctx, MemoryFilter(), limit=3, cursor=cursor)
        seen += [m.content for m in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [f"memory {i}" for i in reversed(range(7))]
    prefs = await engram.memories.list(ctx, MemoryFilter(types=[MemoryType.preference]))
    assert {m.content for m in prefs.items} == {"memory 1", "memory 3", "memory 5"}
    tagged = await engram.memories.list(ctx, MemoryFilter(tags=["t"]))
    assert {m.content for m in tagged.items} == {"memory 0", "memory 1", "memory 2"}
    with pytest.raises(InvalidInput):
        await engram.memories.list(ctx, MemoryFilter(), cursor="garbage")


async def test_update_reembeds_and_keeps_previous_content(engram, tenant):
    ctx, _ = tenant
    memory = (await engram.writes.write(ctx, NewMemory(content="The user lives in Paris"))).memory
    updated = await engram.memories.update(ctx, memory.id, MemoryPatch(content="用户住在柏林", importance=0.9))
    assert updated.content == "用户住在柏林" and updated.language == "zh" and updated.importance == pytest.approx(0.9)
    hits = (await engram.search.search(ctx, SearchRequest(query="柏林"))).hits
    assert hits and hits[0].memory.id == memory.id and hits[0].channels.keyword > 0
    events = await engram.memories.history(ctx, memory.id)
    assert events[-1].event == "updated" and events[-1].details["previous_content"] == "The user lives in Paris"


async def test_update_to_an_existing_content_is_a_conflict(engram, tenant):
    ctx, _ = tenant
    await engram.writes.write(ctx, NewMemory(content="alpha"))
    beta = (await engram.writes.write(ctx, NewMemory(content="beta"))).memory
    with pytest.raises(Conflict):
        await engram.memories.update(ctx, beta.id, MemoryPatch(content="Alpha"))
    assert (await engram.memories.get(ctx, beta.id)).content == "beta"
    with pytest.raises(InvalidInput):
        await engram.memories.update(ctx, beta.id, MemoryPatch())


async def test_forget_restore_purge(engram, tenant):
    ctx, _ = tenant
    memory = (await engram.writes.write(ctx, NewMemory(content="my locker code is 4711"))).memory
    with pytest.raises(Conflict, match="forget it before purging"):
        await engram.memories.purge(ctx, memory.id)
    forgotten = await engram.memories.forget(ctx, memory.id, reason="user asked")
    assert forgotten.status == Status.forgotten
    assert (await engram.search.search(ctx, SearchRequest(query="locker code 4711"))).hits == []
    restored = await engram.memories.restore(ctx, memory.id)
    assert restored.status == Status.active
    assert (await engram.search.search(ctx, SearchRequest(query="4711"))).hits[0].memory.id == memory.id
    await engram.memories.forget(ctx, memory.id)
    await engram.memories.purge(ctx, memory.id)
    with pytest.raises(NotFound):
        await engram.memories.get(ctx, memory.id)
    events = await engram.memories.history(ctx, memory.id)
    assert [e.event for e in events] == ["written", "forgotten", "restored", "forgotten", "purged"]
    assert all(e.content is None for e in events), "a purge erases every copy of the content"


async def test_restore_that_would_duplicate_is_refused(engram, tenant):
    ctx, _ = tenant
    old = (await engram.writes.write(ctx, NewMemory(content="same words"))).memory
    await engram.memories.forget(ctx, old.id)
    await engram.writes.write(ctx, NewMemory(content="same words"))
    with pytest.raises(Conflict, match="duplicate"):
        await engram.memories.restore(ctx, old.id)


async def test_unknown_ids_are_not_found(engram, tenant):
    ctx, _ = tenant
    missing = uuid.uuid4()
    for call in (
        engram.memories.get,
        engram.memories.forget,
        engram.memories.restore,
        engram.memories.history,
    ):
        with pytest.raises(NotFound):
            await call(ctx, missing)


async def test_a_write_reads_again_in_its_turn_while_a_schema_change_waits_for_the_turn(engram, tenant, bootstrapped):
    # In its turn a write reads what it decides on again on its own connection: a read on another
    # one would queue behind a reindex's ALTER TABLE, which waits for this very turn.
    ctx, _ = tenant
    await engram.writes.write(ctx, NewMemory(content="The user's locker code is 4711"))
    content = "The user's locker code is 4712"
    rows = await engram.writes._rows(ctx, [NewMemory(content=content)], [content], ())
    other = await asyncpg.connect(bootstrapped)
    try:
        async with engram.writes.turn(ctx.schema) as (conn, _):
            altering = asyncio.create_task(other.execute(f"ALTER TABLE {ctx.schema}.memories ADD COLUMN probe int"))
            waiting = "SELECT count(*) FROM pg_locks WHERE relation = $1::regclass AND NOT granted"
            for _ in range(200):
                if await conn.fetchval(waiting, f"{ctx.schema}.memories"):
                    break
                await asyncio.sleep(0.05)
            assert await conn.fetchval(waiting, f"{ctx.schema}.memories") == 1  # the ALTER waits for the turn
            seen = await asyncio.wait_for(
                engram.writes._read(conn, ctx, rows, [NewMemory(content=content)]), timeout=20
            )
            assert [m.content for m, _ in seen.neighbours[0]] == ["The user's locker code is 4711"]
        await asyncio.wait_for(altering, timeout=20)
    finally:
        await other.close()
