"""The lifecycle stories over the real database, with the rule judge (no LLM)."""

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta

from engram import scheduler
from engram.domain.judgement import Turn
from engram.domain.models import Layer, MemoryFilter, MemoryPatch, NewMemory, Status, WriteOutcome
from engram.domain.search import SearchRequest
from engram.runtime import engram_session
from engram.services.forgetting import ForgettingService
from engram.settings import LifecycleSettings


async def memories_of(engram, ctx, *statuses: Status):
    return (await engram.memories.list(ctx, MemoryFilter(statuses=list(statuses) or [Status.active]))).items


async def age(engram, ctx, memory_id, days: float) -> None:
    """Move a memory's creation and last access into the past."""
    async with engram.pool.acquire() as conn:
        await conn.execute(
            f"""UPDATE {ctx.schema}.memories SET created_at = created_at - make_interval(days => $2),
                last_accessed_at = last_accessed_at - make_interval(days => $2),
                reinforced_at = reinforced_at - make_interval(days => $2) WHERE id = $1""",
            memory_id,
            days,
        )


async def test_said_three_times_is_one_memory_mentioned_three_times(engram, tenant):
    ctx, _ = tenant
    outcomes = []
    for _ in range(3):
        result = await engram.ingest.remember(ctx, Turn(user="我喜欢喝美式"))
        outcomes += [r.outcome for r in result.results]
    assert outcomes == [WriteOutcome.created, WriteOutcome.duplicate, WriteOutcome.duplicate]
    [memory] = await memories_of(engram, ctx)
    assert memory.content == "用户喜欢喝美式" and memory.mentions == 3 and memory.type == "preference"
    assert memory.access_count == 0  # stated three times, never yet returned to an agent
    assert [e.event for e in await engram.memories.history(ctx, memory.id)] == ["written", "touched", "touched"]


async def test_a_change_supersedes_the_old_fact_and_keeps_it_in_history(engram, tenant):
    ctx, _ = tenant
    coffee = (await engram.ingest.remember(ctx, Turn(user="I like coffee"))).results[0].memory
    switched = (await engram.ingest.remember(ctx, Turn(user="I switched to tea"))).results[0]
    assert switched.outcome == WriteOutcome.superseded and switched.related.id == coffee.id
    old = await engram.memories.get(ctx, coffee.id)
    assert old.status == Status.superseded and old.superseded_by == switched.memory.id
    assert [m.content for m in await memories_of(engram, ctx)] == ["The user switched to tea"]
    hits = (await engram.search.search(ctx, SearchRequest(query="coffee or tea"))).hits
    assert [h.memory.content for h in hits] == ["The user switched to tea"]
    history = await engram.memories.history(ctx, coffee.id)
    assert [e.event for e in history] == ["written", "superseded"]
    assert history[-1].details["superseded_by"] == str(switched.memory.id)
    with_old = SearchRequest(query="coffee", filter=MemoryFilter(statuses=[Status.active, Status.superseded]))
    assert coffee.id in {h.memory.id for h in (await engram.search.search(ctx, with_old)).hits}


async def test_a_detail_is_merged_into_the_existing_memory(engram, tenant):
    ctx, _ = tenant
    first = (await engram.writes.write(ctx, NewMemory(content="I like americano"))).memory
    merged = await engram.writes.write(ctx, NewMemory(content="I like americano without sugar"))
    assert merged.outcome == WriteOutcome.merged and merged.memory.id == first.id
    assert merged.memory.content == "The user likes americano without sugar" and merged.memory.mentions == 2
    events = await engram.memories.history(ctx, first.id)
    assert events[-1].event == "merged" and events[-1].details["previous_content"] == "The user likes americano"
    hits = (await engram.search.search(ctx, SearchRequest(query="sugar"))).hits
    assert hits[0].memory.id == first.id  # re-indexed with the merged content


async def test_different_numbers_are_never_merged(engram, tenant):
    ctx, _ = tenant
    for content in ["My order 12345 was delayed", "My order 12346 was delayed", "我的订单12345延误了"]:
        assert (await engram.writes.write(ctx, NewMemory(content=content))).outcome == WriteOutcome.created
    assert len(await memories_of(engram, ctx)) == 3


async def test_concurrent_writers_of_one_fact_in_other_words_leave_one_memory(engram, tenant):
    ctx, _ = tenant
    wordings = ["I really like coffee", "I like coffee"] * 4
    results = await asyncio.gather(*(engram.writes.write(ctx, NewMemory(content=w)) for w in wordings))
    assert len({r.memory.id for r in results}) == 1
    [memory] = await memories_of(engram, ctx)
    assert memory.mentions == 8


async def test_a_batch_deduplicates_within_itself(engram, tenant):
    ctx, _ = tenant
    items = [NewMemory(content=c) for c in ["I like coffee", "I really like coffee", "I have 2 cats", "I have 3 cats"]]
    outcomes = [r.outcome for r in await engram.writes.write_batch(ctx, items)]
    assert outcomes == [WriteOutcome.created, WriteOutcome.touched, WriteOutcome.created, WriteOutcome.created]


async def test_greetings_questions_passing_states_and_opt_outs_are_not_written(engram, tenant):
    ctx, _ = tenant
    for said in ["你好！", "Thanks!", "What's the weather like?", "我现在有点累", "Don't remember this: I earn 5000"]:
        result = await engram.ingest.remember(ctx, Turn(user=said))
        assert not result.judgement.should_write and result.results == [], said
    assert await memories_of(engram, ctx) == []


async def test_unused_memory_is_forgotten_by_the_scheduled_job_and_restorable(engram, tenant):
    ctx, _ = tenant
    dieting = (await engram.ingest.remember(ctx, Turn(user="我最近在减肥"))).results[0].memory
    fresh = (await engram.writes.write(ctx, NewMemory(content="The user's name is Ada", importance=0.9))).memory
    await age(engram, ctx, dieting.id, 90)

    preview = await engram.forgetting.run(ctx, dry_run=True)
    assert [c.memory.id for c in preview.candidates] == [dieting.id] and preview.candidates[0].forget
    assert preview.candidates[0].score < 0
    assert (await engram.memories.get(ctx, dieting.id)).status == Status.active  # a dry run changes nothing

    one_tenant = dataclasses.replace(engram, settings=engram.settings.model_copy(update={"tenant": ctx.name}))
    await scheduler.run_once(one_tenant)
    gone = await engram.memories.get(ctx, dieting.id)
    assert gone.status == Status.forgotten and gone.forgotten_at is not None
    assert (await engram.memories.get(ctx, fresh.id)).status == Status.active
    assert (await engram.search.search(ctx, SearchRequest(query="减肥"))).hits == []
    history = await engram.memories.history(ctx, dieting.id)
    assert history[-1].event == "forgotten" and history[-1].actor == "forgetting"

    assert (await engram.memories.restore(ctx, dieting.id)).status == Status.active
    assert (await engram.search.search(ctx, SearchRequest(query="减肥"))).hits[0].memory.id == dieting.id


async def test_forgotten_memories_are_purged_after_the_retention_period(engram, tenant):
    ctx, _ = tenant
    memory = (await engram.writes.write(ctx, NewMemory(content="temporary note 42"))).memory
    await engram.memories.forget(ctx, memory.id)
    soon = await engram.forgetting.run(ctx, now=datetime.now(UTC) + timedelta(days=1))
    assert soon.purged == []
    later = await engram.forgetting.run(ctx, now=datetime.now(UTC) + timedelta(days=31))
    assert later.purged == [memory.id]
    assert [e.event for e in await engram.memories.history(ctx, memory.id)][-1] == "purged"


async def test_a_closed_session_takes_its_memories_with_it(engram, tenant):
    ctx, _ = tenant
    await engram.writes.write(
        ctx, NewMemory(content="We are planning a trip to Rome", layer=Layer.session, session_id="s-1")
    )
    await engram.writes.write(ctx, NewMemory(content="The user speaks Italian"))
    other = await engram.writes.write(
        ctx, NewMemory(content="We compare hotel prices", layer=Layer.session, session_id="s-2")
    )
    closed = await engram.memories.close_scope(ctx, Layer.session, "s-1")
    assert [m.content for m in closed] == ["We are planning a trip to Rome"]
    assert {m.content for m in await memories_of(engram, ctx)} == {"The user speaks Italian", "We compare hotel prices"}
    hits = (await engram.search.search(ctx, SearchRequest(query="trip to Rome"))).hits
    assert "We are planning a trip to Rome" not in [h.memory.content for h in hits]
    expired = await engram.forgetting.run(ctx, now=datetime.now(UTC) + timedelta(hours=25))
    assert expired.expired == [other.memory.id]


async def test_search_blends_layers_with_a_preference(engram, tenant):
    ctx, _ = tenant
    await engram.writes.write(
        ctx, NewMemory(content="The user is looking at flights to Lisbon", layer=Layer.session, session_id="s")
    )
    await engram.writes.write(ctx, NewMemory(content="The user is looking for flights to Lisbon"))
    hits = (await engram.search.search(ctx, SearchRequest(query="flights to Lisbon"))).hits
    assert [h.memory.layer for h in hits][:2] == [Layer.long_term, Layer.session]
    session_only = SearchRequest(query="flights to Lisbon", filter=MemoryFilter(layers=[Layer.session]))
    assert [h.memory.layer for h in (await engram.search.search(ctx, session_only)).hits] == [Layer.session]


async def test_consolidation_merges_redundancy_left_by_loose_writes(engram, tenant, settings, bootstrapped):
    ctx, _ = tenant
    # A service with near-duplicate detection all but off, over memories written before slots
    # existed, lets the redundancy in.
    loose = settings.model_copy(
        update={"lifecycle": LifecycleSettings(touch_threshold=0.999, judge_threshold=0.999, scheduler_enabled=False)}
    )
    async with engram_session(loose, bootstrapped) as careless:
        a = (await careless.writes.write(ctx, NewMemory(content="I like coffee"))).memory
        async with engram.pool.acquire() as conn:
            await conn.execute(f"UPDATE {ctx.schema}.memories SET slot = NULL")
        b = (await careless.writes.write(ctx, NewMemory(content="I really like coffee"))).memory
        await careless.writes.write(ctx, NewMemory(content="My flight is CA981"))
    preview = await engram.consolidation.run(ctx, dry_run=True)
    assert len(preview.merged) == 1 and len(await memories_of(engram, ctx)) == 3
    report = await engram.consolidation.run(ctx)
    [pair] = report.merged
    assert {pair.kept, pair.superseded} == {a.id, b.id} and report.derived == []  # rules derive nothing
    kept = await engram.memories.get(ctx, pair.kept)
    assert kept.mentions == 2 and (await engram.memories.get(ctx, pair.superseded)).superseded_by == kept.id
    assert len(await memories_of(engram, ctx)) == 2


async def test_the_same_event_on_different_days_is_two_memories(engram, tenant):
    ctx, _ = tenant
    march = await engram.writes.write(
        ctx, NewMemory(content="Went to the dentist for a cleaning", occurred_at=datetime(2026, 3, 4, tzinfo=UTC))
    )
    june = await engram.writes.write(
        ctx, NewMemory(content="Went to the dentist for a cleaning.", occurred_at=datetime(2026, 6, 16, tzinfo=UTC))
    )
    again = await engram.writes.write(
        ctx, NewMemory(content="Went to the dentist for a cleaning!", occurred_at=datetime(2026, 6, 16, 15, tzinfo=UTC))
    )
    assert march.outcome == "created" and june.outcome == "created" and june.memory.id != march.memory.id
    assert again.outcome in ("touched", "duplicate") and again.memory.id == june.memory.id


async def test_the_weekly_run_is_kept_per_tenant_so_restarts_neither_repeat_nor_skip_it(engram, tenant):
    ctx, _ = tenant
    one_tenant = dataclasses.replace(engram, settings=engram.settings.model_copy(update={"tenant": ctx.name}))
    week = timedelta(days=7)
    start = datetime.now(UTC)
    assert await scheduler.run_once(one_tenant, week, now=start) == [ctx.name]  # never ran: due
    assert await scheduler.run_once(one_tenant, week, now=start + timedelta(days=6)) == []  # not yet
    assert await scheduler.run_once(one_tenant, week, now=start + timedelta(days=7)) == [ctx.name]


async def test_consolidation_forgetting_and_writes_run_together_safely(engram, tenant, settings, bootstrapped):
    """Two consolidation runs, a forgetting run, a user's forget and new writes at once: every
    redundant memory is superseded once, with one history event, and nothing written is lost."""
    ctx, _ = tenant
    loose = settings.model_copy(
        update={"lifecycle": LifecycleSettings(touch_threshold=0.999, judge_threshold=0.999, scheduler_enabled=False)}
    )
    likes = ["coffee", "green tea", "jazz", "chess", "hiking", "sushi", "poetry", "cycling"]
    async with engram_session(loose, bootstrapped) as careless:
        for thing in likes:
            await careless.writes.write(ctx, NewMemory(content=f"I like {thing}"))
        async with engram.pool.acquire() as conn:
            await conn.execute(f"UPDATE {ctx.schema}.memories SET slot = NULL")
        for thing in likes:
            await careless.writes.write(ctx, NewMemory(content=f"I really like {thing}"))
    stale = (await engram.ingest.remember(ctx, Turn(user="我最近在减肥"))).results[0].memory
    await age(engram, ctx, stale.id, 90)
    by_user = (await engram.writes.write(ctx, NewMemory(content="My flight is CA981"))).memory

    new = [f"Trip {i}: the user flew to city number {i}" for i in range(6)]
    runs = await asyncio.gather(
        engram.consolidation.run(ctx),
        engram.consolidation.run(ctx),
        engram.forgetting.run(ctx),
        engram.memories.forget(ctx, by_user.id),
        *(engram.writes.write(ctx, NewMemory(content=c)) for c in new),
    )
    merged = [pair for report in runs[:2] for pair in report.merged]
    superseded = [pair.superseded for pair in merged]
    assert len(superseded) == len(set(superseded))  # no pair merged by both runs
    assert runs[2].forgotten == [stale.id]

    async with engram.pool.acquire() as conn:
        events = await conn.fetch(f"SELECT memory_id, event FROM {ctx.schema}.memory_history")
        rows = await conn.fetch(f"SELECT id, status, superseded_by FROM {ctx.schema}.memories")
    counts: dict[tuple, int] = {}
    for e in events:
        counts[(e["memory_id"], e["event"])] = counts.get((e["memory_id"], e["event"]), 0) + 1
    status = {r["id"]: r["status"] for r in rows}
    assert set(superseded) == {r["id"] for r in rows if r["status"] == "superseded"}
    assert all(counts[(s, "superseded")] == 1 for s in superseded)
    assert sum(n for (_, event), n in counts.items() if event == "merged") == len(merged)
    for r in rows:  # a redundant memory points at one that is still there to answer for it
        if r["status"] == "superseded":
            assert status[r["superseded_by"]] in ("active", "forgotten")
    assert status[by_user.id] == "forgotten" and status[stale.id] == "forgotten"
    assert {m.content for m in await memories_of(engram, ctx)} >= set(new)
    assert len(merged) == len(likes)  # all the redundancy went, once


async def test_the_schedule_never_forgets_what_was_used_or_pinned_after_it_looked(engram, tenant):
    ctx, _ = tenant
    contents = ("The user's gym locker is 12", "The user's bike is blue", "The user's blood type is O", "A kettle")
    used, pinned, kept, idle = [(await engram.writes.write(ctx, NewMemory(content=c))).memory for c in contents]
    await engram.memories.update(ctx, kept.id, MemoryPatch(pinned=True))  # pinned long ago
    for memory in (used, pinned, kept, idle):
        await age(engram, ctx, memory.id, 400)
    looked = datetime.now(UTC)  # all stale when the schedule looked at them
    await engram.search.search(ctx, SearchRequest(query="gym locker", top_k=1))  # then one is used...
    await engram.memories.update(ctx, pinned.id, MemoryPatch(pinned=True))  # ...and one pinned
    for memory in (used, pinned, kept, idle):
        await engram.memories.forget_if_unused(ctx, memory.id, looked, "forgetting", "stale")
    statuses = [(await engram.memories.get(ctx, m.id)).status for m in (used, pinned, kept, idle)]
    assert statuses == [Status.active, Status.active, Status.active, Status.forgotten]


async def test_a_use_just_before_a_run_counts_against_forgetting(engram, tenant):
    """Uses are written in the background (services/access.py); a run counts those of a moment ago."""
    ctx, _ = tenant
    train = await engram.writes.write(ctx, NewMemory(content="The user's train to Lyon leaves at noon", type="event"))
    lifecycle = engram.settings.lifecycle.model_copy(update={"forget_threshold": 0.3})
    forgetting = ForgettingService(engram.pool, engram.memories, engram.judge, lifecycle)
    before = await forgetting.run(ctx, dry_run=True)
    assert train.memory.id in [c.memory.id for c in before.candidates]  # decay 0.25: never used
    found = await engram.search.search(ctx, SearchRequest(query="when does the train to Lyon leave"))
    assert found.hits[0].memory.id == train.memory.id
    after = await forgetting.run(ctx, dry_run=True)
    assert train.memory.id not in [c.memory.id for c in after.candidates]  # one use: decay 0.46
