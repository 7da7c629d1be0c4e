"""Per-tenant metadata (embedding model) and API keys, kept inside the tenant's own schema."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg


async def write_meta(conn: asyncpg.Connection, schema: str, tenant: str, model: str, dim: int) -> None:
    await conn.execute(
        f"""INSERT INTO {schema}.meta (tenant, embedding_model, embedding_dim) VALUES ($1, $2, $3)
            ON CONFLICT (singleton) DO NOTHING""",
        tenant,
        model,
        dim,
    )


async def read_meta(conn: asyncpg.Connection, schema: str) -> dict[str, Any] | None:
    exists = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", f"{schema}.meta")
    if not exists:
        return None
    # Every column: a schema not migrated yet lacks the newer ones (the caller reads them with .get).
    record = await conn.fetchrow(f"SELECT * FROM {schema}.meta")
    return None if record is None else dict(record)


async def add_key(conn: asyncpg.Connection, schema: str, key_hash: str, user_id: str | None = None) -> None:
    """Make the key valid (for the whole tenant, or bound to one of its users); a key given again
    after its revocation is valid again."""
    await conn.execute(
        f"""INSERT INTO {schema}.api_keys (key_hash, user_id) VALUES ($1, $2)
            ON CONFLICT (key_hash) DO UPDATE SET revoked_at = NULL""",
        key_hash,
        user_id,
    )


async def revoke_all_keys(conn: asyncpg.Connection, schema: str) -> int:
    """Every key, the users' too (the tenant goes)."""
    return await retire_keys(conn, schema, 0.0, users_too=True)


async def retire_keys(conn: asyncpg.Connection, schema: str, after_seconds: float, users_too: bool = False) -> int:
    """The tenant's keys valid now (and its users' keys, if ``users_too``) stop being valid
    ``after_seconds`` from now (at once for 0), or sooner if they were retiring already: a key
    rotation's overlap. Returns how many were valid."""
    status = await conn.execute(
        f"""UPDATE {schema}.api_keys
            SET revoked_at = LEAST(COALESCE(revoked_at, 'infinity'), now() + make_interval(secs => $1))
            WHERE (revoked_at IS NULL OR revoked_at > now()) AND ($2 OR user_id IS NULL)""",
        float(after_seconds),
        users_too,
    )
    return int(status.split()[-1])


async def revoke_user_keys(conn: asyncpg.Connection, schema: str, user_id: str) -> int:
    """The keys bound to one user stop being valid now; how many were."""
    status = await conn.execute(
        f"""UPDATE {schema}.api_keys SET revoked_at = now()
            WHERE user_id = $1 AND (revoked_at IS NULL OR revoked_at > now())""",
        user_id,
    )
    return int(status.split()[-1])


async def key_holder(conn: asyncpg.Connection, schema: str, key_hash: str) -> tuple[bool, str | None]:
    """(valid, the user it is bound to or None): valid when not revoked, or revoked at a time
    still to come (a rotated key during its overlap)."""
    row = await conn.fetchrow(
        f"""SELECT user_id FROM {schema}.api_keys
            WHERE key_hash = $1 AND (revoked_at IS NULL OR revoked_at > now())""",
        key_hash,
    )
    return (row is not None, row["user_id"] if row else None)


async def key_is_valid(conn: asyncpg.Connection, schema: str, key_hash: str) -> bool:
    return (await key_holder(conn, schema, key_hash))[0]


async def lifecycle_ran_at(conn: asyncpg.Connection, schema: str) -> datetime | None:
    """When the scheduled forgetting last ran for the tenant."""
    return await conn.fetchval(f"SELECT lifecycle_ran_at FROM {schema}.meta")


async def record_lifecycle_run(conn: asyncpg.Connection, schema: str, at: datetime) -> None:
    await conn.execute(f"UPDATE {schema}.meta SET lifecycle_ran_at = $1", at)


async def read_retention(conn: asyncpg.Connection, schema: str) -> dict[str, Any]:
    return await conn.fetchval(f"SELECT retention FROM {schema}.meta")


async def write_retention(conn: asyncpg.Connection, schema: str, retention: dict[str, Any]) -> None:
    await conn.execute(f"UPDATE {schema}.meta SET retention = $1::jsonb", retention)


async def read_retrieval_choice(conn: asyncpg.Connection, schema: str) -> bool | None:
    """The tenant's choice of the second vector channel (None: the service's default)."""
    return await conn.fetchval(f"SELECT retrieval_channel FROM {schema}.meta")


async def write_retrieval_choice(conn: asyncpg.Connection, schema: str, enabled: bool | None) -> None:
    await conn.execute(f"UPDATE {schema}.meta SET retrieval_channel = $1", enabled)
