"""The control schema: the database's environment label and the tenant registry."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from engram.store.migrate import migrate_schema
from engram.store.schema import CONTROL_SCHEMA

S = CONTROL_SCHEMA


async def migrate_control(conn: asyncpg.Connection) -> list[int]:
    return await migrate_schema(conn, S, "control")


async def read_environment(conn: asyncpg.Connection) -> str | None:
    """The environment this database declares, or None when unlabelled (or not yet migrated)."""
    exists = await conn.fetchval("SELECT to_regclass('engram_control.instance') IS NOT NULL")
    if not exists:
        return None
    return await conn.fetchval(f"SELECT environment FROM {S}.instance")


async def label_environment(conn: asyncpg.Connection, environment: str) -> str:
    """Label an unlabelled database; an existing label is never changed. Returns the label in force."""
    await conn.execute(
        f"INSERT INTO {S}.instance (environment) VALUES ($1) ON CONFLICT (singleton) DO NOTHING", environment
    )
    return await conn.fetchval(f"SELECT environment FROM {S}.instance")


async def register_tenant(conn: asyncpg.Connection, name: str, schema_name: str, claimed_by: str | None = None) -> bool:
    """Record a tenant; False when it was already registered."""
    row = await conn.fetchrow(
        f"""INSERT INTO {S}.tenants (name, schema_name, claimed_by) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO NOTHING RETURNING name""",
        name,
        schema_name,
        claimed_by,
    )
    return row is not None


async def tenant_claim(conn: asyncpg.Connection, name: str) -> tuple[bool, str | None]:
    """(registered, claimed_by) of a tenant name."""
    row = await conn.fetchrow(f"SELECT claimed_by FROM {S}.tenants WHERE name = $1", name)
    return (row is not None, row["claimed_by"] if row else None)


async def transfer_claim(conn: asyncpg.Connection, name: str, claimed_by: str) -> None:
    await conn.execute(f"UPDATE {S}.tenants SET claimed_by = $2 WHERE name = $1", name, claimed_by)


async def count_tenants(conn: asyncpg.Connection) -> int:
    """How many tenants the database holds (0 before its control schema exists)."""
    if not await conn.fetchval("SELECT to_regclass('engram_control.tenants') IS NOT NULL"):
        return 0
    return int(await conn.fetchval(f"SELECT count(*) FROM {S}.tenants"))


async def list_tenants(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return await conn.fetch(f"SELECT name, schema_name, created_at, claimed_by FROM {S}.tenants ORDER BY name")


async def unregister_tenant(conn: asyncpg.Connection, name: str) -> bool:
    status = await conn.execute(f"DELETE FROM {S}.tenants WHERE name = $1", name)
    return status.endswith(" 1")


async def drop_tenant(conn: asyncpg.Connection, name: str, schema: str) -> bool:
    """Unregister the tenant and drop its schema (in the caller's transaction); False if it was
    not registered."""
    if not await unregister_tenant(conn, name):
        return False
    await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return True


async def record_erased_tenant(conn: asyncpg.Connection, name: str) -> None:
    await conn.execute(f"INSERT INTO {S}.erased_tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", name)


async def tenant_erased_at(conn: asyncpg.Connection, name: str) -> datetime | None:
    return await conn.fetchval(f"SELECT erased_at FROM {S}.erased_tenants WHERE name = $1", name)


async def forget_erased_tenant(conn: asyncpg.Connection, name: str) -> None:
    """A new tenant of an erased one's name starts afresh (nothing of the old one is left)."""
    await conn.execute(f"DELETE FROM {S}.erased_tenants WHERE name = $1", name)
