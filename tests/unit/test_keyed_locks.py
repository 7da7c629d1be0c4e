"""services/turns.KeyedLocks: one lock per tenant, kept only while in use."""

import asyncio

from engram.services.turns import KeyedLocks


async def test_holders_of_one_key_take_turns_and_other_keys_do_not_wait():
    locks, inside, most = KeyedLocks(), {"a": 0, "b": 0}, {"a": 0, "b": 0}

    async def hold(key: str) -> None:
        async with locks.hold(key):
            inside[key] += 1
            most[key] = max(most[key], inside[key])
            await asyncio.sleep(0.001)
            inside[key] -= 1

    async def both_at_once() -> None:  # a second key is held while the first one is
        async with locks.hold("a"):
            await asyncio.wait_for(hold("b"), timeout=5)

    await asyncio.gather(*(hold(key) for key in "abababab"), both_at_once())
    assert most == {"a": 1, "b": 1}


async def test_a_lock_is_dropped_once_nobody_waits_for_it():
    locks = KeyedLocks()
    for tenant in range(1000):
        async with locks.hold(f"tenant_{tenant}"):
            assert len(locks) == 1
    assert len(locks) == 0
    first = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("t"):
            first.set()
            await asyncio.sleep(0.01)

    async def waiter() -> None:
        await first.wait()
        async with locks.hold("t"):
            assert len(locks) == 1

    await asyncio.gather(holder(), waiter())
    assert len(locks) == 0


async def test_a_holder_that_fails_releases_the_lock():
    locks = KeyedLocks()
    try:
        async with locks.hold("t"):
            raise RuntimeError("the write failed")
    except RuntimeError:
        pass
    assert len(locks) == 0
    async with asyncio.timeout(5), locks.hold("t"):
        pass
