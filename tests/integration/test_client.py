"""engram.client against the real service: every operation, sync and async, the server's errors
as exceptions, and the README's quickstart run as written."""

import re
import uuid
from datetime import UTC, datetime

import pytest

from engram.client import AsyncEngram, Engram
from engram.domain.models import MemoryFilter, Status, WriteOutcome
from engram.errors import InvalidInput, NotFound, Unauthorized
from tests.conftest import ROOT, unique_tenant


@pytest.fixture
async def tenant_key(engram):
    _, key = await engram.tenants.create(unique_tenant("client"))
    return key


def test_every_operation_blocking(service, tenant_key):
    with Engram(service.url, tenant_key) as memory:
        written = memory.write("The user's order 12345 shipped", type="event", tags=["orders"])
        assert written.outcome is WriteOutcome.created and written.memory.tags == ["orders"]
        again = memory.write("The user's order 12345 shipped", type="event")
        assert again.outcome is WriteOutcome.duplicate and again.memory.id == written.memory.id
        batch = memory.write_many(
            ["The user likes figs", {"content": "The user runs on Sundays", "type": "preference"}]
        )
        assert [r.outcome for r in batch.results] == [WriteOutcome.created, WriteOutcome.created]

        found = memory.search("where is order 12345", explain=True)
        assert found.hits[0].memory.id == written.memory.id and found.explanation is not None
        assert [h.memory.content for h in memory.search("Sundays", types=["preference"]).hits] == [
            "The user runs on Sundays"
        ]
        page = memory.list(tags=["orders"])
        assert [m.id for m in page.items] == [written.memory.id]
        first = memory.list(limit=1)
        assert len(first.items) == 1 and first.next_cursor
        rest = memory.list(limit=10, cursor=first.next_cursor)
        assert len(first.items) + len(rest.items) == 3

        changed = memory.update(written.memory.id, importance=0.6, pinned=True)
        assert (changed.importance, changed.pinned) == (0.6, True)
        unknown_time = memory.update(written.memory.id, occurred_at=None)
        assert unknown_time.occurred_at is None
        assert memory.forget(written.memory.id, reason="shipped").status is Status.forgotten
        assert memory.list(filter=MemoryFilter(statuses=[Status.forgotten])).items[0].id == written.memory.id
        assert memory.restore(written.memory.id).status is Status.active
        events = [e.event for e in memory.history(written.memory.id)]
        assert events[0] == "written" and "forgotten" in events and "restored" in events
        memory.forget(written.memory.id)
        memory.purge(written.memory.id)
        with pytest.raises(NotFound):
            memory.get(written.memory.id)

        kept = memory.remember("Hi! I prefer aisle seats", now=datetime(2026, 3, 1, tzinfo=UTC))
        assert [r.memory.content for r in kept.results] == ["The user prefers aisle seats"]


async def test_the_async_client_and_a_user_of_the_tenant(service, tenant_key):
    async with AsyncEngram(service.url, tenant_key, user_id="alice") as alice:
        mine = await alice.write("The user is allergic to peanuts")
        assert mine.memory.user_id == "alice"
        assert (await alice.search("allergies")).hits[0].memory.id == mine.memory.id
        assert (await alice.get(mine.memory.id)).content == "The user is allergic to peanuts"
    async with AsyncEngram(service.url, tenant_key, user_id="bob") as bob:
        assert (await bob.search("allergies")).hits == []  # alice's memory is hers
        with pytest.raises(NotFound):
            await bob.get(mine.memory.id)
        page = await bob.list()
        assert page.items == []


def test_the_servers_errors_are_raised_as_its_exceptions(service, tenant_key):
    with Engram(service.url, tenant_key) as memory:
        with pytest.raises(InvalidInput) as blank:
            memory.write("   ")
        assert blank.value.field == "content"
        with pytest.raises(InvalidInput) as too_many:
            memory.search("figs", top_k=0)
        assert too_many.value.field == "top_k"
        with pytest.raises(NotFound):
            memory.forget(uuid.uuid4())
    tenant = tenant_key.split(".")[1]
    with Engram(service.url, f"ek.{tenant}.wrong") as stranger, pytest.raises(Unauthorized):
        stranger.list()
    with pytest.raises(InvalidInput) as no_tenant:
        Engram(service.url, "not-a-tenant-key")
    assert no_tenant.value.field == "tenant"


def test_the_readme_quickstart_runs_as_written(service, tenant_key):
    block = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "the README's Python quickstart"
    code = block.group(1).replace("http://127.0.0.1:8080", service.url).replace("<key>", tenant_key)
    printed: list[str] = []
    exec(compile(code, "README.md", "exec"), {"print": printed.append})
    assert any("Lisbon" in line for line in printed), printed
