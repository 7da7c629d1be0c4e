"""`engram reindex`: move a tenant to another embedding model while it is being searched."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import asyncpg
from pydantic import BaseModel

from engram.domain.tenancy import TenantContext
from engram.embedding import Embedders
from engram.errors import ConfigurationError, InvalidInput
from engram.store import reindex as repo

BATCH = 256
# Passes of the background fill at most, while writers keep adding rows.
MAX_PASSES = 4


class ReindexReport(BaseModel):
    tenant: str
    from_model: str
    to_model: str
    dimension: int
    embedded: int


def _offset(progress: Callable[[int, int], None], before: int, total: int, done: int) -> None:
    progress(before + done, total)


class ReindexService:
    def __init__(self, pool: asyncpg.Pool, embedders: Embedders) -> None:
        self._pool = pool
        self._embedders = embedders

    async def run(
        self, ctx: TenantContext, model: str, progress: Callable[[int, int], None] = lambda done, total: None
    ) -> ReindexReport:
        """``progress(done, total)`` after each batch (the total grows when writers add rows)."""
        if model == ctx.embedding_model:
            raise InvalidInput(f"tenant {ctx.name!r} already uses {model}")
        try:
            embedder = self._embedders.get(model)
        except ConfigurationError as exc:
            raise InvalidInput(str(exc), field="model") from None
        embedded = 0
        async with self._pool.acquire() as conn:
            await repo.begin(conn, ctx.schema, embedder.dim)
            # Background fill: searches and writes go on meanwhile. Writers add rows as it goes;
            # it stops chasing them once they stop shrinking the backlog (they come as fast as it
            # embeds), and what is left is embedded under the lock below.
            backlog = await repo.count_pending(conn, ctx.schema)
            total = backlog
            for _ in range(MAX_PASSES):
                embedded += await self._fill_some(
                    conn, ctx, backlog, model, partial(_offset, progress, embedded, total)
                )
                left = await repo.count_pending(conn, ctx.schema)
                if left == 0 or left > backlog // 2:
                    break
                backlog = left
                total = embedded + left
            await repo.build_index(conn, ctx.schema)
            async with conn.transaction():
                await repo.lock_writers(conn, ctx.schema)
                # Rows written or edited since the fill: few, embedded while writers wait.
                while batch := await repo.pending(conn, ctx.schema, BATCH):
                    embedded += await self._fill(conn, ctx, batch, model)
                    progress(embedded, max(total, embedded))
                await repo.swap(conn, ctx.schema, model, embedder.dim)
        return ReindexReport(
            tenant=ctx.name, from_model=ctx.embedding_model, to_model=model, dimension=embedder.dim, embedded=embedded
        )

    async def _fill_some(
        self, conn: asyncpg.Connection, ctx: TenantContext, count: int, model: str, report: Callable[[int], None]
    ) -> int:
        """Embed about `count` pending rows, batch by batch."""
        done = 0
        while done < count and (batch := await repo.pending(conn, ctx.schema, BATCH)):
            done += await self._fill(conn, ctx, batch, model)
            report(done)
        return done

    async def _fill(self, conn: asyncpg.Connection, ctx: TenantContext, batch: list, model: str) -> int:
        vectors = await self._embedders.get(model).embed_documents(
            [content for _, content in batch], f"reindex:{ctx.name}"
        )
        await repo.fill(conn, ctx.schema, [memory_id for memory_id, _ in batch], vectors, model)
        return len(batch)
