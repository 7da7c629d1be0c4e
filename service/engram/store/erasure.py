"""Erasing memories for good: the rows, every history event of them, and a tombstone of ids and
hashes so an import never brings them back. One transaction: all of it or none."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from engram.domain.models import MemoryFilter
from engram.store.filters import Params, where
from engram.store.memories import OWNER, QUOTING, STRUCTURAL_DETAILS


def _with_derived(schema: str, picked: str) -> str:
    """The ids the query ``picked`` selects, and those of the memories derived from any of them:
    what consolidation derived from an erased memory goes with it, whoever else it drew on (its
    text may repeat the erased words); its other sources stay, and the next consolidation
    derives again from what they said alone."""
    return f"""WITH picked AS ({picked})
               SELECT id FROM picked
               UNION
               SELECT d.id FROM {schema}.memories d WHERE d.derived_from && ARRAY(SELECT id FROM picked)"""


async def owned_ids(conn: asyncpg.Connection, schema: str, user: str) -> list[UUID]:
    """Every memory of one user (any status), and every memory derived from theirs."""
    records = await conn.fetch(
        _with_derived(schema, f"SELECT m.id FROM {schema}.memories m WHERE {OWNER} = $1"),
        user,
    )
    return [r["id"] for r in records]


async def selected_ids(conn: asyncpg.Connection, schema: str, f: MemoryFilter | None, ids: list[UUID]) -> list[UUID]:
    """The memories the filter selects (none without one), those of ``ids``, and every memory
    derived from any of them."""
    params = Params(ids)
    chosen = f"SELECT m.id FROM {schema}.memories m WHERE {where(f, params)}" if f is not None else ""
    by_id = f"SELECT m.id FROM {schema}.memories m WHERE m.id = ANY($1::uuid[])"
    records = await conn.fetch(_with_derived(schema, by_id + (f" UNION {chosen}" if chosen else "")), *params.values)
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
    # Events of memories that stay but quote an erased one (a merge took in its words, it
    # superseded them) keep their ids and states, never its text.
    quoting = await conn.execute(
        f"""UPDATE {schema}.memory_history h
            SET details = (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{{}}'::jsonb)
                           FROM jsonb_each(h.details) AS e WHERE e.key = ANY($2::text[]))
            WHERE {_quotes("h")} AND {_holds_text("h")}""",
        [str(i) for i in ids],
        STRUCTURAL_DETAILS,
    )
    await conn.execute(
        f"""UPDATE {schema}.memories m SET derived_from = ARRAY(
                SELECT s FROM unnest(m.derived_from) AS s WHERE s <> ALL($1::uuid[]))
            WHERE m.derived_from && $1::uuid[]""",
        ids,
    )
    memories = await conn.execute(f"DELETE FROM {schema}.memories WHERE id = ANY($1::uuid[])", ids)
    return {
        "memories": _count(memories),
        "memory_history": _count(history),
        "history_quoting": _count(quoting),
        "tombstones": _count(tombstones),
    }


def _quotes(alias: str, ids: str = "$1") -> str:
    """The event names one of the ids (a text[] parameter) as the memory whose text it quotes."""
    # IN (SELECT unnest(...)): a hashed set, where = ANY(...) would compare every event with
    # every id (10,000 ids over a long history took minutes)
    return "(" + " OR ".join(f"{alias}.details->>'{key}' IN (SELECT unnest({ids}::text[]))" for key in QUOTING) + ")"


def _holds_text(alias: str) -> str:
    """The event's details hold more than ids, numbers and states ($2)."""
    return (
        f"jsonb_typeof({alias}.details) = 'object' "
        f"AND EXISTS (SELECT 1 FROM jsonb_object_keys({alias}.details) AS k WHERE k <> ALL($2::text[]))"
    )


async def remaining(
    conn: asyncpg.Connection, schema: str, ids: list[UUID], texts: list[str], user: str | None = None
) -> dict[str, int]:
    """What of the erased is still anywhere in the tenant's tables: the memories (and the user's,
    of a user's erasure), history events of the erased ids, events quoting their text, any
    history event holding one of the erased texts (but one of a memory that stays and is not the
    user's: someone else may have said the same words), the user's valid keys."""
    record = await conn.fetchrow(
        f"""SELECT
              (SELECT count(*) FROM {schema}.memories m
                  WHERE m.id = ANY($1::uuid[]) OR {OWNER} = $4) AS memories,
              (SELECT count(*) FROM {schema}.memory_history h
                  WHERE h.memory_id = ANY($1::uuid[])) AS memory_history,
              (SELECT count(*) FROM {schema}.memory_history h
                  WHERE {_quotes("h", "$5")}
                    AND {_holds_text("h")}) AS history_quoting,
              (SELECT count(*) FROM {schema}.memory_history h
                  WHERE (h.content IN (SELECT unnest($3::text[]))
                         OR h.details->>'content' IN (SELECT unnest($3::text[]))
                         OR h.details->>'previous_content' IN (SELECT unnest($3::text[])))
                    AND NOT EXISTS (SELECT 1 FROM {schema}.memories o
                                    WHERE o.id = h.memory_id AND coalesce(o.user_id, '') IS DISTINCT FROM $4)
                    ) AS history_texts,
              (SELECT count(*) FROM {schema}.api_keys k WHERE k.user_id = $4
                  AND (k.revoked_at IS NULL OR k.revoked_at > now())) AS api_keys""",
        ids,
        STRUCTURAL_DETAILS,
        texts,
        user,
        [str(i) for i in ids],
    )
    return dict(record)


async def schema_rows(conn: asyncpg.Connection, schema: str) -> dict[str, int]:
    """Rows per table of a tenant's schema (unquoted name), before it is dropped."""
    tables = await conn.fetch(
        """SELECT tablename FROM pg_catalog.pg_tables
           WHERE schemaname = $1 AND tablename <> 'schema_migrations' ORDER BY 1""",
        schema,
    )
    counts = {}
    for table in (t["tablename"] for t in tables):
        counts[table] = int(await conn.fetchval(f'SELECT count(*) FROM "{schema}"."{table}"'))
    return counts


async def schema_exists(conn: asyncpg.Connection, schema: str) -> bool:
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)", schema))


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
