"""Named SQL over the second vector column (migration tenant/0013): its queue, its sums, its channel.

A memory whose ``retrieval_embedding`` is NULL waits for its vector (oldest first, through a
partial index); the worker (services/retrieval.py) stores one only if the content it embedded is
still the memory's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import asyncpg
import numpy as np
from pgvector import Vector

from engram.domain.models import MemoryFilter
from engram.domain.search import ChannelHit
from engram.store.filters import Params, where
from engram.store.memories import nearest_order


@dataclass(frozen=True)
class Waiting:
    id: UUID
    content: str


@dataclass(frozen=True)
class Backlog:
    """Memories still without their second vector, and when the oldest of them was written."""

    pending: int
    oldest: datetime | None

    def lag_seconds(self) -> float:
        if not self.pending or self.oldest is None:
            return 0.0
        return max(0.0, (datetime.now(UTC) - self.oldest).total_seconds())


async def waiting(conn: asyncpg.Connection, schema: str, limit: int) -> list[Waiting]:
    """The oldest memories without a second vector (any status: a memory restored from forgotten is
    searchable again at once)."""
    records = await conn.fetch(
        f"""SELECT m.id, m.content FROM {schema}.memories m WHERE m.retrieval_embedding IS NULL
            ORDER BY m.created_at, m.id LIMIT $1""",
        limit,
    )
    return [Waiting(r["id"], r["content"]) for r in records]


async def store(conn: asyncpg.Connection, schema: str, done: list[tuple[Waiting, np.ndarray]]) -> int:
    """Store each vector if its memory still holds the content it was made from (an update in the
    meantime queued it again) and has none yet; returns how many were stored."""
    if not done:
        return 0
    # Rows locked in id order, as every multi-row update does: two never wait on each other.
    result = await conn.execute(
        f"""UPDATE {schema}.memories m SET retrieval_embedding = d.vector
            FROM unnest($1::uuid[], $2::text[], $3::vector[]) AS d(id, content, vector),
                 (SELECT x.id FROM {schema}.memories x WHERE x.id = ANY($1::uuid[]) ORDER BY x.id FOR UPDATE) s
            WHERE m.id = d.id AND s.id = d.id AND m.content = d.content AND m.retrieval_embedding IS NULL""",
        [w.id for w, _ in done],
        [w.content for w, _ in done],
        [Vector(v) for _, v in done],
    )
    return int(result.split()[-1])


async def backlog(conn: asyncpg.Connection, schema: str) -> Backlog:
    record = await conn.fetchrow(
        f"""SELECT count(*) AS pending, min(m.created_at) AS oldest FROM {schema}.memories m
            WHERE m.retrieval_embedding IS NULL"""
    )
    return Backlog(int(record["pending"]), record["oldest"])


async def requeue(conn: asyncpg.Connection, schema: str) -> int:
    """Every memory's second vector made again (`engram reindex --retrieval`)."""
    result = await conn.execute(
        f"UPDATE {schema}.memories SET retrieval_embedding = NULL WHERE retrieval_embedding IS NOT NULL"
    )
    return int(result.split()[-1])


async def language_sums(conn: asyncpg.Connection, schema: str) -> dict[str, tuple[np.ndarray, int]]:
    records = await conn.fetch(f"SELECT s.language, s.total, s.count FROM {schema}.retrieval_sums s WHERE s.count > 0")
    return {r["language"]: (r["total"].to_numpy().astype(np.float32), int(r["count"])) for r in records}


async def candidates(
    conn: asyncpg.Connection,
    schema: str,
    embedding: np.ndarray,
    f: MemoryFilter,
    limit: int,
    exact: bool = False,
) -> list[ChannelHit]:
    """The memories nearest the query by their second vector (those without one are not seen), as
    the first channel finds them (store/memories.py vector_candidates)."""
    params = Params(embedding)
    records = await conn.fetch(
        f"""SELECT m.id, 1 - (m.retrieval_embedding <=> $1) AS score FROM {schema}.memories m
            WHERE m.retrieval_embedding IS NOT NULL AND {where(f, params)}
            ORDER BY {nearest_order("$1", exact, "m.retrieval_embedding")} LIMIT {params.add(limit)}""",
        *params.values,
    )
    return [ChannelHit(id=r["id"], score=float(r["score"]), rank=i) for i, r in enumerate(records, start=1)]
