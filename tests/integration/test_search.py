"""Hybrid search over the real database: each channel, fusion, filters, explain, access statistics."""

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from engram.domain.embedders import RETRIEVAL_MODEL
from engram.domain.fusion import relevance
from engram.domain.models import Layer, MemoryFilter, MemoryType, NewMemory, Status
from engram.domain.search import Channel, SearchRequest
from engram.services.access import AccessLog
from engram.store.db import create_pool

FACTS = [
    ("用户偏好顺丰快递", MemoryType.preference),
    ("用户养了一只柯基犬", MemoryType.fact),
    ("The user's order 12345 was delayed by the storm", MemoryType.event),
    ("The user's order 12399 arrived on time", MemoryType.event),
    ("Flight CA981 to New York leaves at 13:00", MemoryType.event),
    ("Send the invoice to billing@acme.example", MemoryType.task),
    ("The user likes black coffee without sugar", MemoryType.preference),
    ("用户对花生过敏", MemoryType.fact),
]


async def seed(engram, ctx):
    items = [NewMemory(content=c, type=t) for c, t in FACTS]
    return {r.memory.content: r.memory for r in await engram.writes.write_batch(ctx, items)}


async def test_chinese_query_finds_chinese_memory_by_keyword(engram, tenant):
    ctx, _ = tenant
    stored = await seed(engram, ctx)
    result = await engram.search.search(ctx, SearchRequest(query="快递用哪家", explain=True))
    assert result.hits[0].memory.id == stored["用户偏好顺丰快递"].id
    keyword_ids = [h.id for h in result.explanation.candidates[Channel.keyword]]
    assert keyword_ids[0] == stored["用户偏好顺丰快递"].id
    corgi = await engram.search.search(ctx, SearchRequest(query="柯基"))
    assert corgi.hits[0].memory.content == "用户养了一只柯基犬" and corgi.hits[0].channels.keyword > 0


async def test_order_number_is_found_by_the_rule_channel(engram, tenant):
    ctx, _ = tenant
    stored = await seed(engram, ctx)
    result = await engram.search.search(ctx, SearchRequest(query="订单12345到哪了", explain=True))
    target = stored["The user's order 12345 was delayed by the storm"].id
    assert result.hits[0].memory.id == target
    assert result.hits[0].channels.rule == 1.0
    assert [h.id for h in result.explanation.candidates[Channel.rule]] == [target]
    assert result.explanation.query_identifiers == ["12345"]


async def test_codes_and_emails_match_exactly(engram, tenant):
    ctx, _ = tenant
    await seed(engram, ctx)
    flight = await engram.search.search(ctx, SearchRequest(query="when does CA981 leave"))
    assert flight.hits[0].memory.content.startswith("Flight CA981")
    mail = await engram.search.search(ctx, SearchRequest(query="billing@acme.example"))
    assert mail.hits[0].memory.content == "Send the invoice to billing@acme.example"


async def test_explain_lists_every_channel_and_the_fused_ranking(engram, tenant):
    ctx, _ = tenant
    await seed(engram, ctx)
    result = await engram.search.search(ctx, SearchRequest(query="coffee order 12345", explain=True, top_k=3))
    e = result.explanation
    assert set(e.candidates) == set(Channel)
    assert len(e.candidates[Channel.vector]) == len(FACTS)
    assert [h.rank for h in e.candidates[Channel.vector]] == list(range(1, len(FACTS) + 1))
    assert [f.id for f in e.fused[:3]] == [h.memory.id for h in result.hits]
    assert e.weights == engram.settings.retrieval.weights()
    for fused in e.fused:  # every score can be recomputed from what explain shows
        assert 0 <= fused.score <= 1
        assert fused.relevance == round(relevance(fused.channels, e.weights, fused.other_language), 6)
        assert fused.score == round(fused.relevance * fused.time * fused.layer, 6)
    assert {"coffe", "order", "12345"} <= set(e.query_tokens)  # stemmed
    assert set(e.token_idf) == set(e.query_tokens)
    assert e.token_idf["12345"] > e.token_idf["order"]  # 12345 is in one memory, "order" in two
    plain = await engram.search.search(ctx, SearchRequest(query="coffee"))
    assert plain.explanation is None


async def test_cross_language_query_uses_the_vector_channel(engram, tenant):
    ctx, _ = tenant
    await seed(engram, ctx)
    result = await engram.search.search(ctx, SearchRequest(query="用户喜欢喝什么咖啡"))
    assert result.hits[0].memory.content == "The user likes black coffee without sugar"


async def test_filters_and_top_k(engram, tenant):
    ctx, _ = tenant
    await seed(engram, ctx)
    tasks = await engram.search.search(
        ctx, SearchRequest(query="invoice", filter=MemoryFilter(types=[MemoryType.task]))
    )
    assert [h.memory.type for h in tasks.hits] == [MemoryType.task]
    await engram.writes.write_batch(ctx, [NewMemory(content=f"note {i} about the user") for i in range(8)])
    assert len((await engram.search.search(ctx, SearchRequest(query="note about the user"))).hits) == 5
    future = datetime.now(UTC) + timedelta(days=1)
    none = await engram.search.search(ctx, SearchRequest(query="user", filter=MemoryFilter(created_after=future)))
    assert none.hits == []


async def test_top_k_is_capped(engram, tenant):
    ctx, _ = tenant
    notes = [NewMemory(content=f"note {i} about the harbour") for i in range(60)]
    others = [NewMemory(content=f"entry {i} of the diary") for i in range(60)]
    await engram.writes.write_batch(ctx, notes + others)
    capped = await engram.search.search(ctx, SearchRequest(query="harbour", top_k=1000))
    assert len(capped.hits) == engram.settings.retrieval.max_top_k == 50


async def test_layers_and_statuses(engram, tenant):
    ctx, _ = tenant
    kept = (
        await engram.writes.write(
            ctx, NewMemory(content="The user is tired today", layer=Layer.session, session_id="s1")
        )
    ).memory
    gone = (await engram.writes.write(ctx, NewMemory(content="The user is tired of meetings"))).memory
    await engram.memories.forget(ctx, gone.id)
    session_only = await engram.search.search(
        ctx, SearchRequest(query="tired", filter=MemoryFilter(layers=[Layer.session]))
    )
    assert [h.memory.id for h in session_only.hits] == [kept.id]
    with_forgotten = await engram.search.search(
        ctx, SearchRequest(query="tired", filter=MemoryFilter(statuses=[Status.active, Status.forgotten]))
    )
    assert {h.memory.id for h in with_forgotten.hits} == {kept.id, gone.id}


async def test_access_statistics_are_updated_for_returned_hits_only(engram, tenant):
    ctx, _ = tenant
    stored = await seed(engram, ctx)
    first = await engram.search.search(ctx, SearchRequest(query="花生过敏", top_k=1))
    second = await engram.search.search(ctx, SearchRequest(query="花生过敏", top_k=1))
    peanut = stored["用户对花生过敏"].id
    # Only being returned to an agent counts as a use: each search that returns a memory adds one.
    assert first.hits[0].memory.id == peanut and first.hits[0].memory.access_count == 1
    assert second.hits[0].memory.access_count == 2
    fetched = await engram.memories.get(ctx, peanut)
    assert fetched.access_count == 2 and fetched.last_accessed_at > first.hits[0].memory.created_at
    assert fetched.reinforced_at >= fetched.last_accessed_at
    untouched = await engram.memories.get(ctx, stored["用户偏好顺丰快递"].id)
    assert untouched.access_count == 0 and untouched.last_accessed_at is None
    explained = await engram.search.search(ctx, SearchRequest(query="花生过敏", top_k=1, explain=True))
    assert explained.hits[0].memory.access_count == 2  # explaining is debugging, not a use
    assert (await engram.memories.get(ctx, peanut)).access_count == 2


async def test_query_embeddings_are_cached(engram, tenant):
    """Both of a query's vectors (the tenant's model and the retrieval model) are cached."""
    ctx, _ = tenant
    assert ctx.retrieval
    await engram.embedders.load(RETRIEVAL_MODEL)  # a search does not wait for it to load
    await seed(engram, ctx)
    before = engram.cache.hits
    await engram.search.search(ctx, SearchRequest(query="a query asked twice"))
    await engram.search.search(ctx, SearchRequest(query="a query asked twice"))
    assert engram.cache.hits == before + 2


async def test_the_turn_after_a_question_borrows_its_context(engram, tenant):
    """The answer often shares no word with the query: its conversation neighbour does."""
    ctx, _ = tenant
    turns = [
        "Alice: Have you picked a venue for the team offsite yet?",
        "Bob: Yes, the lakeside lodge in Tahoe, booked for three nights.",
        "Alice: Great, I will send the calendar invite.",
    ]
    elsewhere = "Carol: Bob told me the cabin has a hot tub."  # same words nearby, other conversation
    items = [NewMemory(content=t, session_id="chat-1") for t in turns]
    written = await engram.writes.write_batch(ctx, [*items, NewMemory(content=elsewhere, session_id="chat-2")])
    answer = written[1].memory
    result = await engram.search.search(ctx, SearchRequest(query="which venue for the offsite", top_k=3, explain=True))
    ranked = [h.memory.id for h in result.hits]
    assert ranked[:2] == [written[0].memory.id, answer.id]
    hit = next(h for h in result.hits if h.memory.id == answer.id)
    assert hit.channels.keyword == 0 and hit.channels.context > 0
    lent = {h.id for h in result.explanation.candidates[Channel.context]}
    assert answer.id in lent and written[3].memory.id not in lent


async def test_a_neighbour_no_channel_found_is_scored_and_borrows_context(engram, tenant):
    """The answer turn is not among any channel's candidates (closer memories fill the vector
    channel, it shares no word with the query): it comes in as its question's neighbour, scored."""
    ctx, _ = tenant
    turns = [
        "Alice: Have you picked a venue for the team offsite yet?",
        "Bob: Yes, the lakeside lodge in Tahoe, booked for three nights.",
    ]
    places = ["conference hall", "hotel ballroom", "rooftop terrace", "art museum", "mountain cabin", "beach resort"]
    cities = ["Denver", "Lisbon", "Kyoto", "Austin", "Oslo", "Cairo", "Lima", "Perth"]
    closer = [  # distinct enough not to be merged as duplicates
        f"{name} proposed the {place} in {city} as the location of the company retreat"
        for name, (place, city) in zip(
            ["Dana", "Evan", "Fay", "Gus", "Hana", "Ivan", "Jude", "Kai", "Lena", "Milo", "Nora", "Omar"] * 4,
            [(p, c) for p in places for c in cities],
            strict=False,
        )
    ]
    written = await engram.writes.write_batch(
        ctx, [NewMemory(content=t, session_id="chat-1") for t in turns] + [NewMemory(content=c) for c in closer]
    )
    answer = written[1].memory
    result = await engram.search.search(ctx, SearchRequest(query="which venue for the offsite", top_k=10, explain=True))
    candidates = result.explanation.candidates
    assert all(answer.id not in {h.id for h in candidates[c]} for c in (Channel.vector, Channel.keyword))
    hit = next(h for h in result.explanation.fused if h.id == answer.id)
    assert hit.channels.context > 0 and hit.channels.cosine != 0  # its own vector was measured too


async def test_uses_are_counted_off_the_search_path_and_never_lost(engram, tenant, pg_dsn):
    """Concurrent searches count every use without taking row locks; another process's reads see
    them once written (within the flush interval, or at once after a read in this process), and a
    database out of reach keeps the counts for the next flush."""
    ctx, _ = tenant
    stored = await seed(engram, ctx)
    peanut = stored["用户对花生过敏"].id
    request = SearchRequest(query="花生过敏", top_k=1)
    results = await asyncio.gather(*(engram.search.search(ctx, request) for _ in range(20)))
    assert sorted(r.hits[0].memory.access_count for r in results)[-1] == 20  # each search saw its own use
    await engram.access.flush()
    conn = await asyncpg.connect(pg_dsn)  # as another replica would read it
    try:
        count, at = await conn.fetchrow(
            f"SELECT access_count, last_accessed_at FROM {ctx.schema}.memories WHERE id = $1", peanut
        )
    finally:
        await conn.close()
    assert count == 20 and at == max(r.hits[0].memory.last_accessed_at for r in results)

    closed = await create_pool(pg_dsn, 1, 1)
    await closed.close()
    offline = AccessLog(closed)
    offline.count(ctx.schema, [peanut])
    await offline.flush()  # the database is out of reach: nothing raised, nothing dropped
    assert offline.count(ctx.schema, [peanut]) == {peanut: 2}

    # The uses of a tenant dropped since (by `engram eval`, or by another process) go with it.
    online = AccessLog(engram.pool)
    online.count("tenant_dropped_since", [peanut])
    await online.flush()
    assert online.count("tenant_dropped_since", [peanut]) == {peanut: 1}


async def test_a_read_waits_for_the_uses_a_flush_under_way_has_taken(engram, tenant, pg_dsn):
    """The interval's flush takes a tenant's counts before it writes them: a read's flush that came
    meanwhile must wait for that write, or it reads the memory without them (a forget answered
    with 0 uses, and a second one with 1)."""
    ctx, _ = tenant
    peanut = (await seed(engram, ctx))["用户对花生过敏"].id
    uses = AccessLog(engram.pool)
    uses.count(ctx.schema, [peanut])
    holder = await asyncpg.connect(pg_dsn)  # holds the row, so the interval's write stays under way
    try:
        async with holder.transaction():
            await holder.execute(f"SELECT 1 FROM {ctx.schema}.memories WHERE id = $1 FOR UPDATE", peanut)
            interval = asyncio.create_task(uses.flush())
            await asyncio.sleep(0)  # it has taken the counts
            read = asyncio.create_task(uses.flush(ctx.schema))
            await asyncio.sleep(0.2)
            assert not read.done(), "the read's flush did not wait for the write under way"
        await asyncio.gather(interval, read)
        count = await holder.fetchval(f"SELECT access_count FROM {ctx.schema}.memories WHERE id = $1", peanut)
    finally:
        await holder.close()
    assert count == 1


async def test_a_long_reply_does_not_win_keyword_evidence_for_being_long(engram, tenant):
    """An assistant's long reply holds some words of most questions: beyond 48 distinct tokens a
    memory keeps (48 / its tokens) ^ 0.5 of its keyword share, so the short answer that holds the
    same words ranks first (domain/keyword.py)."""
    ctx, _ = tenant
    filler = " ".join(f"topic{i} thing{i} matter{i}" for i in range(120))
    long_reply = f"assistant: Here are some thoughts about tea and your favourite drinks. {filler}"
    answer = (await engram.writes.write(ctx, NewMemory(content="My favourite tea is jasmine"))).memory
    reply = (await engram.writes.write(ctx, NewMemory(content=long_reply))).memory
    result = await engram.search.search(ctx, SearchRequest(query="favourite tea", top_k=2, explain=True))
    keyword = {h.id: h.score for h in result.explanation.candidates[Channel.keyword]}
    assert keyword[answer.id] == pytest.approx(1.0)
    assert keyword[reply.id] < 0.6 * keyword[answer.id]  # ~360 tokens: (48/360) ^ 0.5 = 0.37
    assert result.hits[0].memory.id == answer.id
