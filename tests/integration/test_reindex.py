"""`engram reindex`: a tenant moves to another embedding model while it is being searched."""

import asyncio

import pytest

from engram.domain.models import NewMemory, WriteOutcome
from engram.domain.search import Channel, SearchRequest
from engram.errors import InvalidInput
from engram.runtime import engram_session
from engram.store import tenant_meta
from tests.conftest import unique_tenant

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
        steps: list[tuple[int, int]] = []
        report = await engram.reindex.run(ctx, "multilingual-e5-small", lambda done, total: steps.append((done, total)))
        # A writer still holding the old model (the context is cached for seconds) follows the switch.
        late = await engram.writes.write(ctx, NewMemory(content="The user started a coin collection"))
        again = await engram.writes.write(ctx, NewMemory(content="The user started a coin collection!"))
    finally:
        done.set()
        await searching
    assert report.embedded >= len(FACTS) and report.dimension == 384
    assert steps and steps[-1][0] == report.embedded and all(d <= t for d, t in steps)  # the bar's steps
    assert outcomes and all(n > 0 for n in outcomes)  # every search during the switch found something

    async with engram.pool.acquire() as conn:
        meta = await tenant_meta.read_meta(conn, ctx.schema)
        models = await conn.fetch(f"SELECT DISTINCT embedding_model FROM {ctx.schema}.memories")
    assert (meta["embedding_model"], meta["embedding_dim"]) == ("multilingual-e5-small", 384)
    assert [r["embedding_model"] for r in models] == ["multilingual-e5-small"]

    # The running service followed the switch: new writes and the vector channel use the new model,
    # and a repeat is recognised with vectors of one model (not two compared).
    assert late.outcome == WriteOutcome.created and late.memory.embedding_model == "multilingual-e5-small"
    assert again.outcome == WriteOutcome.touched and again.memory.id == late.memory.id
    e5 = settings.model_copy(update={"embedding_model": "multilingual-e5-small"})
    async with engram_session(e5, bootstrapped) as restarted:
        ctx_e5 = await restarted.tenants.resolve(ctx.name)
        result = await restarted.search.search(ctx_e5, SearchRequest(query="coin collection", explain=True))
        assert result.explanation.candidates[Channel.vector]
        assert result.hits[0].memory.content == "The user started a coin collection"


async def test_reindex_to_the_same_model_is_refused(engram, tenant):
    ctx, _ = tenant
    with pytest.raises(InvalidInput):
        await engram.reindex.run(ctx, ctx.embedding_model)


async def test_a_reindex_under_traffic_loses_nothing_and_leaves_other_tenants_alone(engram, settings, bootstrapped):
    """Writers keep writing to the tenant being moved and to another; every acknowledged write is
    stored once, with the model of its tenant, and a process started afterwards serves both."""
    moved, _ = await engram.tenants.create(unique_tenant("moved"))
    other, _ = await engram.tenants.create(unique_tenant("other"))
    for ctx in (moved, other):
        await engram.writes.write_batch(ctx, [NewMemory(content=f) for f in FACTS[:150]])
    acknowledged: dict[str, list[str]] = {moved.name: [], other.name: []}
    done = asyncio.Event()

    async def keep_writing(tenant: str, worker: int) -> None:
        n = 0
        while not done.is_set():
            content = f"Visit {worker}-{n}: the user went to museum {worker * 1000 + n} in town {n % 7}"
            ctx = await engram.tenants.resolve(tenant)
            result = await engram.writes.write(ctx, NewMemory(content=content))
            assert result.outcome == WriteOutcome.created, (content, result.outcome)
            acknowledged[tenant].append(content)
            n += 1

    writers = [asyncio.create_task(keep_writing(t, w)) for t in acknowledged for w in range(2)]
    try:
        await engram.reindex.run(moved, "multilingual-e5-small")
        await asyncio.sleep(0.5)  # writes after the switch too
    finally:
        done.set()
        await asyncio.gather(*writers)
    assert all(len(contents) > 3 for contents in acknowledged.values()), acknowledged

    async with engram.pool.acquire() as conn:
        for ctx, model in ((moved, "multilingual-e5-small"), (other, "use-multilingual-v3")):
            rows = await conn.fetch(f"SELECT content, embedding_model FROM {ctx.schema}.memories")
            stored = [r["content"] for r in rows]
            assert {r["embedding_model"] for r in rows} == {model}
            assert sorted(c for c in stored if c.startswith("Visit")) == sorted(acknowledged[ctx.name])

    async with engram_session(settings, bootstrapped) as restarted:  # the configured model is the old one
        for ctx in (moved, other):
            fresh = await restarted.tenants.resolve(ctx.name)
            content = acknowledged[ctx.name][-1]
            hits = (await restarted.search.search(fresh, SearchRequest(query=content))).hits
            assert hits[0].memory.content == content


async def test_reindex_to_an_unknown_model_names_the_field(engram, tenant):
    ctx, _ = tenant
    with pytest.raises(InvalidInput) as refused:
        await engram.reindex.run(ctx, "nosuch")
    assert refused.value.field == "model" and "nosuch" in str(refused.value)
