"""The per-language vector sums a search centres on are kept in the process for a moment
(services/sums.py): its own changes are seen at once, another process's within the moment."""

import asyncio

from engram.domain.models import NewMemory
from engram.runtime import engram_session
from engram.services.sums import LanguageSums
from engram.store.db import create_pool


def counted(sums) -> dict[str, int]:
    return {language: count for language, (_, count) in sums.items()}


async def test_a_process_sees_its_own_changes_at_once_and_another_s_after_the_moment(
    engram, tenant, settings, bootstrapped
):
    ctx, _ = tenant
    model = ctx.embedding_model
    await engram.writes.write(ctx, NewMemory(content="The user's bike is a red Gazelle"))
    assert counted(await engram.sums.of(ctx.schema, model)) == {"en": 1}
    await engram.writes.write(ctx, NewMemory(content="用户每天早上七点跑步"))  # kept sums dropped
    assert counted(await engram.sums.of(ctx.schema, model)) == {"en": 1, "zh": 1}
    purged = await engram.writes.write(ctx, NewMemory(content="The user's cat is called Miso"))
    assert counted(await engram.sums.of(ctx.schema, model)) == {"en": 2, "zh": 1}
    await engram.memories.forget(ctx, purged.memory.id)  # still counted: restorable
    assert counted(await engram.sums.of(ctx.schema, model)) == {"en": 2, "zh": 1}
    await engram.memories.purge(ctx, purged.memory.id)  # gone, in a turn of its own
    assert counted(await engram.sums.of(ctx.schema, model)) == {"en": 1, "zh": 1}

    patient = LanguageSums(engram.pool, seconds=3600)
    assert counted(await patient.of(ctx.schema, model)) == {"en": 1, "zh": 1}
    async with engram_session(settings, bootstrapped) as other:  # another process
        await other.writes.write(ctx, NewMemory(content="The user's desk is by the window"))
    assert counted(await patient.of(ctx.schema, model)) == {"en": 1, "zh": 1}  # kept
    assert counted(await LanguageSums(engram.pool, seconds=0).of(ctx.schema, model)) == {"en": 2, "zh": 1}
    patient.changed(ctx.schema)
    assert counted(await patient.of(ctx.schema, model)) == {"en": 2, "zh": 1}


async def test_sums_read_across_a_change_are_not_kept(engram, tenant, bootstrapped):
    """A read that began before a change of this process may predate it: it answers, but is not kept."""
    ctx, _ = tenant
    model = ctx.embedding_model
    await engram.writes.write(ctx, NewMemory(content="The user's bike is a red Gazelle"))
    pool = await create_pool(bootstrapped, 1, 1)
    try:
        sums = LanguageSums(pool, seconds=3600)
        held = await pool.acquire()
        reading = asyncio.create_task(sums.of(ctx.schema, model))
        await asyncio.sleep(0)  # the read has begun: it waits for the connection
        sums.changed(ctx.schema)
        await pool.release(held)
        assert counted(await reading) == {"en": 1}
        await engram.writes.write(ctx, NewMemory(content="The user's desk is by the window"))  # not told
        assert counted(await sums.of(ctx.schema, model)) == {"en": 2}  # read again
    finally:
        await pool.close()
