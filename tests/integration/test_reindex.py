"""`engram reindex`: a tenant moves to another embedding model while it is being searched."""

import asyncio

import pytest

from engram.domain.models import NewMemory
from engram.domain.search import Channel, SearchRequest
from engram.errors import Conflict, InvalidInput
from engram.runtime import engram_session
from engram.store import tenant_meta

FACTS = [f"Fact number {i}: the user collects stamps from country {i}" for i in range(300)]


async def test_reindex_switches_model_while_searches_keep_working(engram, tenant, settings, bootstrapped):
    ctx, _ = tenant
    await engram.writes.write_batch(ctx, [NewMemory(content=f) for f in FACTS])
    outcomes: list[int] = []
    done = asyncio.Event()

    async def keep_searching() -> None:
        while not done.is_set():
            ctx_now = await engram.tenants.resolve(ctx.name)
            result = await engram.search.search(ctx_now, SearchRequest(query="stamps from country 7"))
            outcomes.append(len(result.hits))
            await asyncio.sleep(0.01)

    searching = asyncio.create_task(keep_searching())
    try:
        report = await engram.reindex.run(ctx, "multilingual-e5-small")
        with pytest.raises(Conflict, match="retry"):  # a writer still holding the old model is told to retry
            await engram.writes.write(ctx, NewMemory(content="The user started a coin collection"))
        fresh = ctx
        for _ in range(40):  # the service re-reads a tenant's model every 5 s
            if fresh.embedding_model == "multilingual-e5-small":
                break
            await asyncio.sleep(0.5)
            fresh = await engram.tenants.resolve(ctx.name)
        late = await engram.writes.write(fresh, NewMemory(content="The user started a coin collection"))
    finally:
        done.set()
        await searching
    assert report.embedded >= len(FACTS) and report.dimension == 384
    assert outcomes and all(n > 0 for n in outcomes)  # every search during the switch found something

    async with engram.pool.acquire() as conn:
        meta = await tenant_meta.read_meta(conn, ctx.schema)
        models = await conn.fetch(f"SELECT DISTINCT embedding_model FROM {ctx.schema}.memories")
    assert (meta["embedding_model"], meta["embedding_dim"]) == ("multilingual-e5-small", 384)
    assert [r["embedding_model"] for r in models] == ["multilingual-e5-small"]

    # The running service followed the switch: new writes and the vector channel use the new model.
    assert late.memory.embedding_model == "multilingual-e5-small"
    e5 = settings.model_copy(update={"embedding_model": "multilingual-e5-small"})
    async with engram_session(e5, bootstrapped, check=False) as restarted:
        ctx_e5 = await restarted.tenants.resolve(ctx.name)
        result = await restarted.search.search(ctx_e5, SearchRequest(query="coin collection", explain=True))
        assert result.explanation.candidates[Channel.vector]
        assert result.hits[0].memory.content == "The user started a coin collection"


async def test_reindex_to_the_same_model_is_refused(engram, tenant):
    ctx, _ = tenant
    with pytest.raises(InvalidInput):
        await engram.reindex.run(ctx, ctx.embedding_model)
