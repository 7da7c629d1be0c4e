"""The second vector channel (services/retrieval.py): every memory also gets a vector of the
retrieval model after its write is acknowledged. A memory is found the moment it is written, by
its second vector once it has one; the queue is the table itself, so it survives a restart; a
vector made from a text the memory no longer holds is never stored; a tenant may turn it off."""

from __future__ import annotations

import asyncio
import time

import httpx
import numpy as np

from engram.domain.embedders import RETRIEVAL_MODEL, RetrievalChoice
from engram.domain.models import MemoryPatch, NewMemory
from engram.domain.search import Channel, SearchRequest
from engram.runtime import engram_session
from engram.store import retrieval as store
from tests.conftest import tenant_api, unique_tenant

QUESTION = "which bike does the user ride to work"


async def explained(engram, ctx, query=QUESTION):
    return (await engram.search.search(ctx, SearchRequest(query=query, top_k=5, explain=True))).explanation


async def test_a_memory_is_found_at_once_and_by_its_second_vector_once_it_has_one(engram, tenant):
    ctx, _ = tenant
    assert ctx.retrieval
    written = await engram.writes.write(ctx, NewMemory(content="The user rides a red Gazelle bike to the office"))
    before = await explained(engram, ctx)
    assert before.fused[0].id == written.memory.id  # the first channel finds it
    assert before.candidates[Channel.retrieval] == [] and before.fused[0].channels.retrieval == 0
    assert (await engram.retrieval.status(ctx)).pending == 1

    assert await engram.retrieval.work(ctx) == 1
    status = await engram.retrieval.status(ctx)
    assert (status.pending, status.lag_seconds, status.enabled) == (0, 0, True)
    after = await explained(engram, ctx)
    assert [h.id for h in after.candidates[Channel.retrieval]] == [written.memory.id]
    top = after.fused[0]
    assert top.id == written.memory.id and top.channels.retrieval > 0 and top.relevance > before.fused[0].relevance
    assert after.weights.retrieval > 0


async def test_new_content_waits_for_a_new_vector_and_a_stale_one_is_never_stored(engram, tenant):
    ctx, _ = tenant
    written = await engram.writes.write(ctx, NewMemory(content="The user's locker is number 14"))
    await engram.retrieval.work(ctx)
    await engram.memories.update(ctx, written.memory.id, MemoryPatch(content="The user's locker is number 41"))
    async with engram.pool.acquire() as conn:
        assert (await store.backlog(conn, ctx.schema)).pending == 1  # the trigger queued it again
        stale = await store.waiting(conn, ctx.schema, 10)
        await engram.memories.update(ctx, written.memory.id, MemoryPatch(content="The user's locker is number 7"))
        assert await store.store(conn, ctx.schema, [(stale[0], np.ones(384, np.float32) / np.sqrt(384))]) == 0
    assert await engram.retrieval.work(ctx) == 1
    async with engram.pool.acquire() as conn:
        vector = await conn.fetchval(
            f"SELECT retrieval_embedding FROM {ctx.schema}.memories WHERE id = $1", written.memory.id
        )
    expected = await engram.embedders.get(RETRIEVAL_MODEL).embed_documents(["The user's locker is number 7"])
    assert float(np.dot(vector.to_numpy(), expected[0])) > 0.999


async def test_the_second_vectors_sums_follow_every_change(engram, tenant):
    """The channel centres on each language's mean of the second vectors, kept by triggers: after
    vectors are made, a content changes and a memory is purged, they equal the rows' own."""
    ctx, _ = tenant
    ids = [
        (await engram.writes.write(ctx, NewMemory(content=text))).memory.id
        for text in ("The user drinks oat milk", "用户每天早上七点跑步", "The user's sister lives in Lyon")
    ]
    await engram.retrieval.work(ctx)
    await engram.memories.update(ctx, ids[0], MemoryPatch(content="The user drinks soy milk now"))
    await engram.memories.forget(ctx, ids[2])
    await engram.memories.purge(ctx, ids[2])
    async with engram.pool.acquire() as conn:
        kept = await store.language_sums(conn, ctx.schema)
        rows = await conn.fetch(
            f"""SELECT language, sum(retrieval_embedding) AS total, count(*) AS count FROM {ctx.schema}.memories
                WHERE retrieval_embedding IS NOT NULL GROUP BY language"""
        )
    assert {r["language"]: r["count"] for r in rows} == {"zh": 1}  # the changed one waits again
    assert {language: count for language, (_, count) in kept.items()} == {"zh": 1}
    assert np.allclose(kept["zh"][0], rows[0]["total"].to_numpy(), atol=1e-5)
    await engram.retrieval.work(ctx)
    async with engram.pool.acquire() as conn:
        assert {k: c for k, (_, c) in (await store.language_sums(conn, ctx.schema)).items()} == {"zh": 1, "en": 1}


async def test_the_queue_outlives_the_process_that_wrote(engram, settings, bootstrapped):
    name = unique_tenant()
    async with engram_session(settings, bootstrapped) as writer:
        ctx, _ = await writer.tenants.create(name)
        await writer.writes.write_batch(ctx, [NewMemory(content=f"The user's note number {i}") for i in range(20)])
    # that process ended without making a single second vector; the next one finds the queue
    ctx = await engram.tenants.resolve(name)
    assert (await engram.retrieval.status(ctx)).pending == 20
    assert await engram.retrieval.work(ctx) == 20
    assert (await engram.retrieval.status(ctx)).pending == 0


async def test_two_processes_share_a_queue_without_doing_its_work_twice(engram, tenant, settings, bootstrapped):
    ctx, _ = tenant
    await engram.writes.write_batch(ctx, [NewMemory(content=f"The user visited city number {i}") for i in range(60)])
    ours_embedded = engram.retrieval.embedded
    async with engram_session(settings, bootstrapped) as other:
        ours, theirs = await asyncio.gather(engram.retrieval.work(ctx), other.retrieval.work(ctx))
        theirs_embedded = other.retrieval.embedded
    before = engram.retrieval.embedded
    left = await engram.retrieval.work(ctx)  # one may have stopped early while the other held the lock
    assert ours + theirs + left == 60
    assert before - ours_embedded + theirs_embedded == ours + theirs  # no batch was embedded twice
    assert (await engram.retrieval.status(ctx)).pending == 0


async def test_a_tenant_turns_the_channel_off_and_back_to_the_default(engram, tenant):
    ctx, _ = tenant
    await engram.writes.write(ctx, NewMemory(content="The user rides a red Gazelle bike to the office"))
    status = await engram.retrieval.choose(ctx, RetrievalChoice(enabled=False))
    assert (status.enabled, status.chosen, status.pending) == (False, False, 0)
    off = await engram.tenants.resolve(ctx.name)
    assert not off.retrieval and await engram.retrieval.work(off) == 0
    explanation = await explained(engram, off)
    assert explanation.candidates[Channel.retrieval] == [] and explanation.fused
    status = await engram.retrieval.choose(off, RetrievalChoice(enabled=None))
    assert (status.enabled, status.chosen, status.pending) == (True, None, 1)


async def test_a_tenant_of_the_retrieval_model_has_no_second_channel(engram, settings, bootstrapped):
    e5 = settings.model_copy(update={"embedding_model": RETRIEVAL_MODEL})
    async with engram_session(e5, bootstrapped) as other:
        ctx, _ = await other.tenants.create(unique_tenant())
        assert not ctx.retrieval  # its first channel is that model already
    off = settings.model_copy(update={"retrieval_channel": False})
    async with engram_session(off, bootstrapped) as small:
        ctx, _ = await small.tenants.create(unique_tenant())
        assert not ctx.retrieval
        status = await small.retrieval.choose(ctx, RetrievalChoice(enabled=True))  # a tenant may still choose it
        assert status.enabled


async def test_the_service_catches_up_by_itself_and_says_how_far_behind_it_is(service, engram):
    ctx, key = await engram.tenants.create(unique_tenant())
    user_key = await engram.tenants.user_key(ctx.name, "ana")
    async with tenant_api(service, ctx.name, key) as api:
        written = await api.post(
            "/memories/batch", json={"items": [{"content": f"Fact number {i}"} for i in range(30)]}
        )
        assert written.status_code == 200, written.text
        deadline, status = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            status = (await api.get("/retrieval")).json()
            if status["pending"] == 0:
                break
            await asyncio.sleep(0.2)
        assert status == {"model": RETRIEVAL_MODEL, "enabled": True, "chosen": None, "pending": 0, "lag_seconds": 0}
        async with httpx.AsyncClient(base_url=service.url) as plain:
            exposition = (await plain.get("/metrics")).text
        assert f'engram_retrieval_backlog{{tenant="{ctx.name}"}} 0.0' in exposition
        assert f'engram_retrieval_vectors_total{{tenant="{ctx.name}"}} 30.0' in exposition
        bad = await api.put("/retrieval", json={"enabled": "sometimes"})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "enabled"
    async with tenant_api(service, ctx.name, user_key) as as_user:
        refused = await as_user.put("/retrieval", json={"enabled": False})
        assert refused.status_code == 403


async def test_a_search_does_not_wait_for_the_retrieval_model_to_load(engram, tenant, settings, bootstrapped):
    """Compiling the model takes seconds once a process: searches meanwhile go without the
    channel (never blocked), and use it once it is loaded."""
    ctx, _ = tenant
    written = await engram.writes.write(ctx, NewMemory(content="The user rides a red Gazelle bike to the office"))
    await engram.retrieval.work(ctx)
    async with engram_session(settings.model_copy(update={"retrieval_channel": False}), bootstrapped) as fresh:
        assert fresh.embedders.ready(RETRIEVAL_MODEL) is None  # not loaded: loading starts now
        first = await explained(fresh, ctx)
        assert first.candidates[Channel.retrieval] == [] and first.fused[0].id == written.memory.id
        await fresh.embedders.load(RETRIEVAL_MODEL)
        later = await explained(fresh, ctx)
        assert [h.id for h in later.candidates[Channel.retrieval]] == [written.memory.id]
