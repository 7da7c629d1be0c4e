"""Growing a benchmark tenant to 100k or 1M memories in minutes, not hours.

The write path (embedding, dedup) is measured separately; filling goes around it: rows get the
same derived columns the write path computes (tokens, identifiers, dedup key) and vectors made by
the real embedder for a pool of contents, each reused with a little noise (vectors of real text
keep the HNSW graph realistic; random Gaussian ones would not). A tenant with the second vector
channel gets its second vectors the same way (the retrieval model's, of the same contents), as if
the background worker had caught up. Rows are COPYed into a staging table and moved in with the
HNSW indexes dropped, which are then rebuilt once, as a bulk load should.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from benchmarks.corpus import contents
from engram.domain.embedders import RETRIEVAL_MODEL
from engram.domain.models import Kind
from engram.domain.tenancy import TenantContext
from engram.runtime import Engram
from engram.services.writes import derived_columns

POOL = 2000  # contents embedded for real
CHUNK = 50_000
NOISE = 0.01
LONG = 4 * 3600  # seconds a bulk statement may take (an HNSW build over 1M vectors takes a while)


Pool = dict[int, tuple[np.ndarray, np.ndarray | None]]  # template -> (first vectors, second vectors)


async def vector_pool(engram: Engram, ctx: TenantContext, rng: random.Random) -> Pool:
    """Real embeddings of POOL contents, grouped by template: the tenant's model's, and the
    retrieval model's (row for row) when the tenant has the second channel."""
    stream = contents(rng)
    pairs = [next(stream) for _ in range(POOL)]
    texts = [c for _, c in pairs]
    vectors = await engram.embedders.get(ctx.embedding_model).embed_documents(texts)
    second = await engram.embedders.get(RETRIEVAL_MODEL).embed_documents(texts) if ctx.retrieval else None
    grouped: dict[int, list[int]] = defaultdict(list)
    for row, (template, _) in enumerate(pairs):
        grouped[template].append(row)
    return {
        t: (np.stack([vectors[r] for r in rows]), None if second is None else np.stack([second[r] for r in rows]))
        for t, rows in grouped.items()
    }


def _near(base: np.ndarray, noise: np.random.Generator) -> np.ndarray:
    noisy = base + noise.normal(0, NOISE, base.shape)
    return (noisy / np.linalg.norm(noisy)).astype(np.float32)


async def grow(
    engram: Engram,
    ctx: TenantContext,
    target: int,
    rng: random.Random,
    pool: Pool,
    owner: Callable[[int], str | None] = lambda _: None,
    history: bool = False,
) -> float:
    """Add memories until the tenant holds ``target``; returns the seconds it took. ``owner``
    names the user of the n-th memory added (None: the tenant's own); with ``history``, each gets
    its "written" event, as the write path records it."""
    started = time.perf_counter()
    schema, model = ctx.schema, ctx.embedding_model
    async with engram.pool.acquire() as conn:
        have = await conn.fetchval(f"SELECT count(*) FROM {schema}.memories")
        if have >= target:
            return 0.0
        await conn.execute(f"DROP INDEX IF EXISTS {schema}.memories_embedding_hnsw")
        await conn.execute(f"DROP INDEX IF EXISTS {schema}.memories_retrieval_hnsw")
        stream = contents(rng)
        noise = np.random.default_rng(rng.randrange(2**32))
        missing, added = target - have, 0
        while missing > 0:
            records = []
            for _ in range(min(CHUNK, missing)):
                template, content = next(stream)
                first, second = pool[template]
                pick = rng.randrange(len(first))
                vector = _near(first[pick], noise)
                retrieval = None if second is None else _near(second[pick], noise)
                user = owner(added)
                added += 1
                c = derived_columns(content, Kind.fact, "long_term", None, vector, model, user)
                records.append(
                    (
                        content,
                        c["language"],
                        c["dedup_key"],
                        c["identifiers"],
                        c["search_tokens"],
                        vector,
                        c["slot"],
                        user,
                        retrieval,
                    )
                )
            async with conn.transaction():
                await conn.execute(
                    f"""CREATE TEMP TABLE staging (content text, language text, dedup_key text, identifiers text[],
                        search_tokens text, embedding vector({ctx.embedding_dim}), slot text, user_id text,
                        retrieval_embedding vector(384)) ON COMMIT DROP"""
                )
                await conn.copy_records_to_table(
                    "staging",
                    records=records,
                    columns=[
                        "content",
                        "language",
                        "dedup_key",
                        "identifiers",
                        "search_tokens",
                        "embedding",
                        "slot",
                        "user_id",
                        "retrieval_embedding",
                    ],
                    timeout=LONG,
                )
                await conn.execute(
                    f"""WITH added AS (
                          INSERT INTO {schema}.memories (content, type, layer, language, dedup_key, identifiers,
                                search_tokens, embedding, embedding_model, importance, slot, user_id,
                                retrieval_embedding)
                          SELECT content, 'fact', 'long_term', language, dedup_key, identifiers,
                                 search_tokens::tsvector, embedding, $1, 0.5, slot, user_id, retrieval_embedding
                          FROM staging
                          ON CONFLICT DO NOTHING RETURNING id, content)
                        INSERT INTO {schema}.memory_history (memory_id, event, actor, content, details)
                        SELECT id, 'written', 'bench', content, '{{}}'::jsonb FROM added WHERE $2""",
                    model,
                    history,
                    timeout=LONG,
                )
            missing -= len(records)
        await conn.execute("SET maintenance_work_mem = '4GB'")
        await conn.execute("SET max_parallel_maintenance_workers = 2")
        await conn.execute(
            f"CREATE INDEX memories_embedding_hnsw ON {schema}.memories USING hnsw (embedding vector_cosine_ops)",
            timeout=LONG,
        )
        await conn.execute(
            f"""CREATE INDEX memories_retrieval_hnsw ON {schema}.memories
                USING hnsw (retrieval_embedding vector_cosine_ops)""",
            timeout=LONG,
        )
        await conn.execute(f"VACUUM ANALYZE {schema}.memories", timeout=LONG)
    return time.perf_counter() - started
