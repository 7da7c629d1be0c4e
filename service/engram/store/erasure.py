"""Erasing memories for good: the rows, every history event of them, and a tombstone of ids and
hashes so an import never brings them back. One transaction: all of it or none."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from engram.store.memories import OWNER


async def owned_ids(conn: asyncpg.Connection, schema: str, user: str) -> list[UUID]:
    """Every memory of one user (any status), and every memory derived from theirs alone."""
    records = await conn.fetch(
        f"""WITH theirs AS (SELECT m.id FROM {schema}.memories m WHERE {OWNER} = $1)
            SELECT id FROM theirs
            UNION
            SELECT d.id FROM {schema}.memories d
            WHERE cardinality(d.derived_from) > 0 AND d.derived_from <@ ARRAY(SELECT id FROM theirs)""",
        user,
    )
    return [r["id"] for r in records]


async def erase(conn: asyncpg.Connection, schema: str, ids: list[UUID]) -> dict[str, int]:
    """Tombstone, then delete the memories and their history; what other memories derived from
    them forgets them as sources. Counts per table."""
    tombstones = await conn.execute(
        f"""INSERT INTO {schema}.erased (memory_id, dedup_key, external_key)
            SELECT m.id, m.dedup_key, CASE WHEN m.external_id IS NULL THEN NULL
                                           ELSE encode(sha256(convert_to(m.external_id, 'UTF8')), 'hex') END
            FROM {schema}.memories m WHERE m.id = ANY($1::uuid[])
            ON CONFLICT (memory_id) DO NOTHING""",
        ids,
    )
    history = await conn.execute(f"DELETE FROM {schema}.memory_history WHERE memory_id = ANY($1::uuid[])", ids)
    await conn.execute(
        f"""UPDATE {schema}.memories m SET derived_from = ARRAY(
                SELECT s FROM unnest(m.derived_from) AS s WHERE s <> ALL($1::uuid[]))
            WHERE m.derived_from && $1::uuid[]""",
        ids,
    )
    memories = await conn.execute(f"DELETE FROM {schema}.memories WHERE id = ANY($1::uuid[])", ids)
    return {"memories": _count(memories), "memory_history": _count(history), "tombstones": _count(tombstones)}


async def remaining(
    conn: asyncpg.Connection, schema: str, user: str, ids: list[UUID], texts: list[str]
) -> dict[str, int]:
    """What of theirs is still anywhere in the tenant's tables: their memories, history events of
    the erased ids, any history event holding one of the erased texts (but another user's own,
    who may have said the same words), their valid keys."""
    record = await conn.fetchrow(
        f"""SELECT
              (SELECT count(*) FROM {schema}.memories m WHERE {OWNER} = $1) AS memories,
              (SELECT count(*) FROM {schema}.memory_history h WHERE h.memory_id = ANY($2::uuid[])) AS memory_history,
              (SELECT count(*) FROM {schema}.memory_history h
                  WHERE (h.content = ANY($3::text[]) OR h.details->>'content' = ANY($3::text[])
                         OR h.details->>'previous_content' = ANY($3::text[]))
                    AND NOT EXISTS (SELECT 1 FROM {schema}.memories o
                                    WHERE o.id = h.memory_id AND coalesce(o.user_id, '') <> $1)) AS history_texts,
              (SELECT count(*) FROM {schema}.api_keys k WHERE k.user_id = $1
                  AND (k.revoked_at IS NULL OR k.revoked_at > now())) AS api_keys""",
        user,
        ids,
        texts,
    )
    return dict(record)


async def texts_of(conn: asyncpg.Connection, schema: str, ids: list[UUID]) -> list[str]:
    """Every text the memories and their history hold, to check afterwards that none is left."""
    records = await conn.fetch(
        f"""SELECT m.content AS text FROM {schema}.memories m WHERE m.id = ANY($1::uuid[])
            UNION SELECT h.content FROM {schema}.memory_history h
            WHERE h.memory_id = ANY($1::uuid[]) AND h.content IS NOT NULL""",
        ids,
    )
    return [r["text"] for r in records]


async def erased_ids(conn: asyncpg.Connection, schema: str, ids: list[UUID]) -> set[UUID]:
    records = await conn.fetch(f"SELECT memory_id FROM {schema}.erased WHERE memory_id = ANY($1::uuid[])", ids)
    return {r["memory_id"] for r in records}


async def erased_external_ids(conn: asyncpg.Connection, schema: str, external_ids: list[str]) -> set[str]:
    records = await conn.fetch(
        f"""SELECT t.x FROM unnest($1::text[]) AS t(x)
            WHERE EXISTS (SELECT 1 FROM {schema}.erased e
                          WHERE e.external_key = encode(sha256(convert_to(t.x, 'UTF8')), 'hex'))""",
        external_ids,
    )
    return {r["x"] for r in records}


def _count(status: str) -> int:
    return int(status.split()[-1])
