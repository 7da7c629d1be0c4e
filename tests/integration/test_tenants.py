import contextlib
import uuid

import asyncpg
import pytest

from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest
from engram.domain.tenancy import schema_name
from engram.errors import ConfigurationError, Conflict, Forbidden, InvalidInput, NotFound, Unauthorized
from engram.runtime import engram_session, open_engram
from engram.settings import Settings
from engram.store import control
from tests.conftest import unique_tenant


async def test_create_authenticate_and_rotate(engram):
    name = unique_tenant()
    ctx, key = await engram.tenants.create(name)
    assert (await engram.tenants.authenticate(name, key)).schema == ctx.schema
    new_key = await engram.tenants.rotate_key(name)
    with pytest.raises(Unauthorized):
        await engram.tenants.authenticate(name, key)
    assert (await engram.tenants.authenticate(name, new_key)).name == name
    assert name in {t.name for t in await engram.tenants.list()}


async def test_key_of_one_tenant_is_forbidden_on_another(engram):
    a, key_a = await engram.tenants.create(unique_tenant())
    b, _ = await engram.tenants.create(unique_tenant())
    with pytest.raises(Forbidden):
        await engram.tenants.authenticate(b.name, key_a)
    with pytest.raises(Unauthorized):
        await engram.tenants.authenticate(a.name, None)
    with pytest.raises(Unauthorized):
        await engram.tenants.authenticate(a.name, f"ek.{a.name}.not-the-key")


async def test_duplicate_and_invalid_names(engram):
    name = unique_tenant()
    await engram.tenants.create(name)
    with pytest.raises(Conflict):
        await engram.tenants.create(name)
    for bad in ("Upper", "-x", "a_b", "x" * 41, ""):
        with pytest.raises(InvalidInput):
            await engram.tenants.create(bad)
    with pytest.raises(NotFound):
        await engram.tenants.resolve("no-such-tenant")


async def test_each_tenant_keeps_its_model_whatever_the_service_is_configured_with(settings, bootstrapped, engram):
    old, _ = await engram.tenants.create(unique_tenant())
    await engram.writes.write(old, NewMemory(content="The user keeps bees"))
    other = settings.model_copy(update={"embedding_model": "multilingual-e5-small"})
    async with engram_session(other, bootstrapped) as e5:  # the start-up check passes
        kept = await e5.tenants.resolve(old.name)
        assert kept.embedding_model == old.embedding_model == "use-multilingual-v3"
        new, _ = await e5.tenants.create(unique_tenant())
        assert new.embedding_model == "multilingual-e5-small"
        for ctx in (kept, new):
            await e5.writes.write(ctx, NewMemory(content="The user grows tomatoes"))
            hits = (await e5.search.search(ctx, SearchRequest(query="what does the user grow?"))).hits
            assert hits[0].memory.content == "The user grows tomatoes"


async def test_service_refuses_a_database_of_another_environment(settings, bootstrapped, engram):
    async with engram.pool.acquire() as conn:
        assert await control.read_environment(conn) == "test"
    prod = Settings(database_url=bootstrapped, environment="prod")
    with pytest.raises(ConfigurationError, match="labelled 'test'"):
        await open_engram(prod, bootstrapped)


async def test_no_pooled_session_keeps_a_new_tenants_functions(engram):
    """The session that migrated a tenant ran its PL/pgSQL functions and would keep their plans for
    its lifetime, where every later catalog change walks them: provisioning slowed down linearly
    with the tenants made before (31 ms a tenant at first, 198 ms at 800). It is closed instead."""
    name = f"plans-{uuid.uuid4().hex[:8]}"
    await engram.tenants.create(name)
    await engram.tenants.migrate_all()  # nothing pending: no session to close, nothing compiled
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(engram.pool.acquire()) for _ in range(engram.pool.get_max_size())]
        for conn in sessions:
            try:
                compiled = await conn.fetchval(
                    """SELECT count(*) FROM pg_catalog.pg_backend_memory_contexts
                       WHERE name = 'PL/pgSQL function' AND ident LIKE $1""",
                    f"%{schema_name(name)}%",
                )
            except asyncpg.InsufficientPrivilegeError:
                pytest.skip("reading a session's memory contexts needs pg_read_all_stats")
            assert compiled == 0
