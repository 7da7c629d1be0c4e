"""Online re-embedding of one tenant: a second vector column filled in the background, indexed
concurrently, then swapped in by one short transaction. Every statement names its schema."""

from __future__ import annotations

from uuid import UUID

import asyncpg
import numpy as np
from pgvector import Vector


async def begin(conn: asyncpg.Connection, schema: str, dim: int) -> None:
    """Add the new column (or keep the one a previous, interrupted run left) and a trigger that
    marks a row's new vector stale when its content changes meanwhile."""
    current = await conn.fetchval(
        """SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a
           WHERE a.attrelid = $1::regclass AND a.attname = 'embedding_next' AND NOT a.attisdropped""",
        f"{schema}.memories",
    )
    if current is not None and current != f"vector({dim})":
        await conn.execute(
            f"ALTER TABLE {schema}.memories DROP COLUMN embedding_next, DROP COLUMN embedding_next_model"
        )
    await conn.execute(
        f"""ALTER TABLE {schema}.memories ADD COLUMN IF NOT EXISTS embedding_next vector({int(dim)}),
                                          ADD COLUMN IF NOT EXISTS embedding_next_model text"""
    )
    await conn.execute(
        f"""CREATE OR REPLACE FUNCTION {schema}.memories_reindex_stale() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN NEW.embedding_next := NULL; NEW.embedding_next_model := NULL; RETURN NEW; END $$"""
    )
    await conn.execute(f"DROP TRIGGER IF EXISTS memories_reindex_stale ON {schema}.memories")
    await conn.execute(
        f"""CREATE TRIGGER memories_reindex_stale BEFORE UPDATE OF content ON {schema}.memories FOR EACH ROW
            WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION {schema}.memories_reindex_stale()"""
    )


async def pending(conn: asyncpg.Connection, schema: str, limit: int) -> list[tuple[UUID, str]]:
    records = await conn.fetch(
        f"SELECT m.id, m.content FROM {schema}.memories m WHERE m.embedding_next IS NULL ORDER BY m.id LIMIT $1",
        limit,
    )
    return [(r["id"], r["content"]) for r in records]


async def count_pending(conn: asyncpg.Connection, schema: str) -> int:
    return await conn.fetchval(f"SELECT count(*) FROM {schema}.memories WHERE embedding_next IS NULL")


async def fill(conn: asyncpg.Connection, schema: str, ids: list[UUID], vectors: list[np.ndarray], model: str) -> None:
    await conn.execute(
        f"""UPDATE {schema}.memories m SET embedding_next = t.v, embedding_next_model = $3
            FROM unnest($1::uuid[], $2::vector[]) AS t(id, v),
                 (SELECT x.id FROM {schema}.memories x WHERE x.id = ANY($1::uuid[]) ORDER BY x.id FOR UPDATE) s
            WHERE m.id = t.id AND s.id = t.id""",
        ids,
        [Vector(v) for v in vectors],
        model,
    )


async def build_index(conn: asyncpg.Connection, schema: str) -> None:
    """HNSW on the new column without blocking writers (must run outside a transaction)."""
    invalid = await conn.fetchval(
        """SELECT NOT i.indisvalid FROM pg_catalog.pg_index i WHERE i.indexrelid = to_regclass($1)""",
        f"{schema}.memories_embedding_next_hnsw",
    )
    if invalid:  # left by an interrupted build
        await conn.execute(f"DROP INDEX {schema}.memories_embedding_next_hnsw")
    await conn.execute(
        f"""CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_embedding_next_hnsw
            ON {schema}.memories USING hnsw (embedding_next vector_cosine_ops)"""
    )


async def lock_writers(conn: asyncpg.Connection, schema: str) -> None:
    """Inside the switch transaction: writers wait, readers go on."""
    await conn.execute(f"LOCK TABLE {schema}.memories IN SHARE ROW EXCLUSIVE MODE")


async def swap(conn: asyncpg.Connection, schema: str, model: str, dim: int) -> None:
    """Inside the switch transaction, once every row has its new vector: the new column becomes
    `embedding` and the tenant's model changes. Readers wait only for these statements."""
    await conn.execute(f"DROP TRIGGER memories_reindex_stale ON {schema}.memories")
    await conn.execute(f"DROP FUNCTION {schema}.memories_reindex_stale()")
    await conn.execute(f"ALTER TABLE {schema}.memories DROP COLUMN embedding, DROP COLUMN embedding_model")
    await conn.execute(f"ALTER TABLE {schema}.memories RENAME COLUMN embedding_next TO embedding")
    await conn.execute(f"ALTER TABLE {schema}.memories RENAME COLUMN embedding_next_model TO embedding_model")
    await conn.execute(
        f"ALTER TABLE {schema}.memories ALTER COLUMN embedding SET NOT NULL, ALTER COLUMN embedding_model SET NOT NULL"
    )
    await conn.execute(f"ALTER INDEX {schema}.memories_embedding_next_hnsw RENAME TO memories_embedding_hnsw")
    await conn.execute(
        f"UPDATE {schema}.meta SET embedding_model = $1, embedding_dim = $2, generation = generation + 1", model, dim
    )
    await conn.execute(f"SELECT {schema}.track_vector_sums()")  # the language means, of the new vectors
