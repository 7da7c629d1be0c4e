"""Hybrid search: two vector channels (the tenant's model, and the retrieval model's second vectors
where memories have them), keyword and rule channels run concurrently, their evidence is combined
(domain/fusion.py), conversation neighbours lend context, a named time and the layer weigh in,
and hits far weaker than the best are cut. A query that asks only for a time is answered by the
time alone."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg
import numpy as np

from engram.cache import Cache
from engram.domain.centring import Centring, centre
from engram.domain.embedders import RETRIEVAL_MODEL
from engram.domain.fusion import (
    ChannelHit,
    ChannelScores,
    FusedHit,
    Link,
    Similarity,
    Weights,
    add_context,
    below_newer,
    best_first,
    cut,
    evidence_first,
    fuse,
    in_time,
    latest_first,
    ordered_below_newer,
    prefer_layers,
)
from engram.domain.identifiers import query_identifiers
from engram.domain.keyword import MAX_QUERY_TOKENS, KeywordQuery, TokenStatistics
from engram.domain.models import Layer, Memory, MemoryFilter
from engram.domain.search import (
    Channel,
    Explanation,
    SearchHit,
    SearchRequest,
    SearchResult,
    TimeFilter,
)
from engram.domain.temporal import TimeIntent, TimeWindow, time_intent
from engram.domain.tenancy import TenantContext
from engram.domain.text import guess_language, is_conversation
from engram.domain.tokenize import query_tokens
from engram.embedding import Embedders
from engram.judge import QueryRewriter
from engram.observability import metrics
from engram.services.access import AccessLog
from engram.services.sums import LanguageSums
from engram.settings import RetrievalSettings
from engram.store import memories as repo
from engram.store import retrieval as retrieval_store
from engram.store.db import NearestPool

log = logging.getLogger(__name__)
# Characters of each candidate's content shown by explain.
SNIPPET = 200

# Below this many memories, token frequencies are counted exactly (cheap on a small table);
# above, they come from ANALYZE's sample of the table, re-read at most this often.
EXACT_COUNT_LIMIT = 2000
_STATISTICS_SECONDS = 60.0
# How far along a chain of marks (A -> B -> C) a search brings the newer memories in.
MARK_CHAIN = 3


def happened(memory: Memory) -> datetime:
    """When the memory's fact took place: its occurred_at, or its creation when unknown."""
    return memory.occurred_at or memory.created_at


# A memory said this long after a time the query names may tell of it ("I cleaned my sneakers last
# month", said in a session dated after that month): it is not taken for a memory of another time.
TOLD_AFTER = timedelta(days=60)


def of_the_time(memory: Memory, window: TimeWindow) -> bool:
    """The memory is of the window's time: it happened then, or its text names a time (read from
    when it was said: a session's date is when a thing was said) that meets the window."""
    when = happened(memory)
    if window.start <= when < window.end:
        return True
    told = time_intent(memory.content[:MENTION_CHARS], when if when.tzinfo else when.replace(tzinfo=UTC)).window
    return told is not None and told.start < window.end and window.start < told.end


def told_after_it(memory: Memory, window: TimeWindow) -> bool:
    """Said after the window, soon enough to be telling of it."""
    return window.end <= happened(memory) < window.end + TOLD_AFTER


# The start of a memory read for a time it names (a long reply's first mention is enough).
MENTION_CHARS = 1000


@dataclass(frozen=True)
class Reading:
    """What a query asks for, once rewritten and its time words taken out."""

    intent: TimeIntent
    text: str  # the words to look for
    identifiers: list[str]
    rewritten: str | None = None
    rewrite_ms: float | None = None


@dataclass(frozen=True)
class Query:
    """The query's vector, and the same centred on its language's mean; the same of the retrieval
    model when the tenant has the second channel."""

    embedding: np.ndarray
    centring: Centring
    retrieval: Centring | None = None


@dataclass(frozen=True)
class Candidates:
    vector: list[ChannelHit]
    keyword: list[ChannelHit]
    identifiers: list[ChannelHit]
    window: list[ChannelHit]
    retrieval: list[ChannelHit]

    def ids(self) -> list[UUID]:
        every = (*self.vector, *self.retrieval, *self.keyword, *self.identifiers, *self.window)
        return list(dict.fromkeys(h.id for h in every))


NO_CANDIDATES = Candidates([], [], [], [], [])


@dataclass(frozen=True)
class Ranking:
    """Every scored candidate (for explain), the hits returned, and the rows they came from."""

    fused: list[FusedHit]
    top: list[FusedHit]
    rows: dict[UUID, tuple[Memory, Similarity]]


class SearchService:
    def __init__(
        self,
        pool: asyncpg.Pool,
        nearest: NearestPool,
        sums: LanguageSums,
        embedders: Embedders,
        cache: Cache,
        settings: RetrievalSettings,
        layer_weights: dict[Layer, float],
        access: AccessLog,
        rewriter: QueryRewriter | None = None,
        noise_of: Callable[[str], float] = lambda model: 0.0,
    ):
        self._access = access
        self._rewriter = rewriter
        self._noise_of = noise_of
        self._layer_weights = {layer.value: weight for layer, weight in layer_weights.items()}
        self._pool = pool
        self._nearest = nearest
        self._sums = sums
        self._embedders = embedders
        self._cache = cache
        self._settings = settings
        self._statistics: dict[str, tuple[float, TokenStatistics | None]] = {}

    async def search(self, ctx: TenantContext, request: SearchRequest) -> SearchResult:
        s = self._settings
        started = time.perf_counter()
        request = request.model_copy(update={"filter": ctx.scoped(request.filter)})
        top_k = min(request.top_k or s.default_top_k, s.max_top_k)
        weights = s.weights()
        reading = await self._read(request)
        if reading.intent.only_time:
            keyword = KeywordQuery(tokens=[], weights=[], match_tokens=[])
            found, ranking = NO_CANDIDATES, await self._by_time(ctx, request, reading, top_k)
        else:
            # The retrieval model's query vector is made while the other channels look.
            # Its model may still be loading (seconds, once a process): this search goes without.
            second = (
                asyncio.ensure_future(self._second_query(ctx, reading.text, request.filter.user_id))
                if ctx.retrieval and weights.retrieval > 0 and self._embedders.ready(RETRIEVAL_MODEL)
                else None
            )
            if second is not None:
                second.add_done_callback(_failure_read)
            try:
                embedding, keyword, sums, prior = await asyncio.gather(
                    self._query_embedding(ctx, ctx.embedding_model, reading.text, request.filter.user_id),
                    self._keyword_query(ctx, query_tokens(reading.text)),
                    self._sums.of(ctx.schema, ctx.embedding_model),
                    self._embedders.get(ctx.embedding_model).language_prior(),
                )
                query = Query(embedding, centre(embedding, guess_language(reading.text), sums, prior))
                limit = max(s.candidates, top_k)
                found = await self._candidates(ctx, request, reading, weights, query, second, keyword, limit)
                if second is not None:
                    query = replace(query, retrieval=await second)
            finally:  # a second query this search no longer waits for is stopped
                if second is not None and not second.done():
                    second.cancel()
            ranking = await self._rank(ctx, request, reading, weights, query, found, top_k)
        hits = [SearchHit(memory=ranking.rows[h.id][0], score=h.score, channels=h.channels) for h in ranking.top]
        if hits and not request.explain:  # explaining is debugging, not a use of the memories
            hits = self._record_access(ctx, hits)
        metrics.searches.labels(ctx.name).inc()
        log_search(ctx, request, reading, found, hits, time.perf_counter() - started)
        if not request.explain:
            return SearchResult(hits=hits)
        snippets = {memory_id: memory.content[:SNIPPET] for memory_id, (memory, _) in ranking.rows.items()}
        return SearchResult(
            hits=hits,
            explanation=explain(
                reading, weights, s, self._noise_of(ctx.embedding_model), keyword, found, ranking.fused, snippets
            ),
        )

    async def _rank(
        self,
        ctx: TenantContext,
        request: SearchRequest,
        reading: Reading,
        weights: Weights,
        query: Query,
        found: Candidates,
        top_k: int,
    ) -> Ranking:
        s = self._settings
        async with self._pool.acquire() as conn:
            with metrics.timed(metrics.search_stages, "hydrate"):
                rows = await self._hydrate(conn, ctx, found.ids(), query)

            noise = self._noise_of(ctx.embedding_model)
            retrieval_noise = self._noise_of(RETRIEVAL_MODEL)

            language = guess_language(reading.text)

            def fused_of(ids: set[UUID] | None = None) -> list[FusedHit]:
                """The candidates (``ids``, or all) scored by their own channels; one's score
                depends on no other's, so newcomers are scored alone."""
                chosen = rows if ids is None else {i: rows[i] for i in ids if i in rows}
                similarity = {memory_id: sim for memory_id, (_, sim) in chosen.items()}
                other = {memory_id for memory_id, (m, _) in chosen.items() if other_language(m.language, language)}
                keyword, rule = found.keyword, found.identifiers
                if ids is not None:
                    keyword, rule = [h for h in keyword if h.id in ids], [h for h in rule if h.id in ids]
                return fuse(similarity, keyword, rule, weights, noise, other, retrieval_noise)

            fused = fused_of()
            # Only a memory of a conversation has neighbours: no round trip when no anchor has one.
            top = fused[: s.context_anchors]
            anchors = [h.id for h in top if h.id in rows and rows[h.id][0].session_id is not None]
            if weights.context > 0 and anchors:
                with metrics.timed(metrics.search_stages, "context"):
                    found_links = await repo.neighbours(conn, ctx.schema, anchors, s.context_radius, request.filter)
                    links = [Link(*x) for x in found_links]
                    newcomers = list(dict.fromkeys(x.neighbour for x in links if x.neighbour not in rows))
                    if newcomers:  # scored by their own channels before they borrow any context
                        rows |= await self._hydrate(conn, ctx, newcomers, query)
                        added = set(newcomers)
                        fused = best_first([h for h in fused if h.id not in added] + fused_of(added))
                    fused = add_context(fused, links, weights)
            # A newer memory that may have replaced a candidate is one too, and so on along a chain
            # (A -> B -> C): it ranks above it.
            for _ in range(MARK_CHAIN):
                pointed = {m.newer for m, _ in rows.values() if m.newer is not None and m.newer not in rows}
                added = (
                    set(await repo.admitted(conn, ctx.schema, sorted(pointed), request.filter)) if pointed else set()
                )
                if not added:
                    break
                rows |= await self._hydrate(conn, ctx, sorted(added), query)
                fused = best_first([*fused, *fused_of(added)])
        window = reading.intent.window
        if window is not None:
            inside = {i for i, (m, _) in rows.items() if of_the_time(m, window)}
            told_after = {i for i, (m, _) in rows.items() if i not in inside and told_after_it(m, window)}
            fused = in_time(fused, inside, s.outside_window, weights, told_after)
        fused = prefer_layers(fused, {i: m.layer.value for i, (m, _) in rows.items()}, self._layer_weights)
        newer_of = {i: m.newer for i, (m, _) in rows.items() if m.newer is not None}
        fused = below_newer(fused, newer_of, weights)
        fused = evidence_first(fused, window_named=window is not None)
        kept = cut(fused, s.cut_ratio, s.min_score)
        if reading.intent.recent:
            # "when did I last..." asks for the last past time: a plan for tomorrow is not it.
            asked = request.now or datetime.now(UTC)
            asked = asked if asked.tzinfo else asked.replace(tzinfo=UTC)
            past = {i: happened(m) for i, (m, _) in rows.items() if happened(m) <= asked}
            kept = latest_first(kept, past, s.recent_ratio)
        kept = ordered_below_newer(kept, newer_of)
        return Ranking(fused=fused, top=kept[:top_k], rows=rows)

    async def _by_time(self, ctx: TenantContext, request: SearchRequest, reading: Reading, top_k: int) -> Ranking:
        """ "What did I do last week": the memories of that time, events and important ones first,
        returned in the order they happened. The time channel is the only evidence."""
        window = reading.intent.window
        assert window is not None
        async with self._pool.acquire() as conn:
            with metrics.timed(metrics.search_stages, "time"):
                memories = await repo.window_memories(conn, ctx.schema, window.start, window.end, request.filter, top_k)
        fused = []
        for m in sorted(memories, key=happened):
            layer = self._layer_weights.get(m.layer.value, 1.0)
            fused.append(FusedHit(id=m.id, score=layer, relevance=1.0, channels=ChannelScores(), layer=layer))
        fused = ordered_below_newer(fused, {m.id: m.newer for m in memories if m.newer is not None})
        return Ranking(fused=fused, top=fused, rows={m.id: (m, Similarity(0.0, 0.0)) for m in memories})

    async def _second_query(self, ctx: TenantContext, text: str, user: str | None) -> Centring:
        """The query's vector of the retrieval model, centred on the means of the second vectors."""
        embedding, sums, prior = await asyncio.gather(
            self._query_embedding(ctx, RETRIEVAL_MODEL, text, user),
            self._sums.of_retrieval(ctx.schema),
            (await self._embedders.load(RETRIEVAL_MODEL)).language_prior(),
        )
        return centre(embedding, guess_language(text), sums, prior)

    def _record_access(self, ctx: TenantContext, hits: list[SearchHit]) -> list[SearchHit]:
        """Only what is returned counts as a use; the hits carry their counts with this use."""
        now = datetime.now(UTC)
        pending = self._access.count(ctx.schema, [h.memory.id for h in hits], now)
        used = {"last_accessed_at": now, "reinforced_at": now}
        return [
            h.model_copy(
                update={
                    "memory": h.memory.model_copy(
                        update={"access_count": h.memory.access_count + pending[h.memory.id], **used}
                    )
                }
            )
            for h in hits
        ]

    async def _read(self, request: SearchRequest) -> Reading:
        """Rewrite a long query (with an LLM), then take its time words out."""
        rewritten, rewrite_ms = None, None
        if self._rewriter is not None and is_conversation(request.query):
            started = time.perf_counter()
            with metrics.timed(metrics.search_stages, "rewrite"):
                rewritten = await self._rewriter.rewrite(request.query)
            rewrite_ms = round((time.perf_counter() - started) * 1000, 1)
        query = rewritten or request.query
        intent = TimeIntent(rest=query)
        if self._settings.understand_time and not is_conversation(query):
            now = request.now or datetime.now(UTC)
            intent = time_intent(query, now if now.tzinfo else now.replace(tzinfo=UTC))
        text = intent.rest or query
        return Reading(intent, text, query_identifiers(text), rewritten, rewrite_ms)

    async def _candidates(
        self,
        ctx: TenantContext,
        request: SearchRequest,
        reading: Reading,
        weights: Weights,
        query: Query,
        second: asyncio.Future[Centring] | None,
        keyword: KeywordQuery,
        limit: int,
    ) -> Candidates:
        """Every channel's candidates, fetched concurrently, each on its own pooled connection (the
        vector channel's from the connections that walk the HNSW index)."""

        async def channel(stage: str, run, *args, source: asyncpg.Pool | NearestPool = self._pool) -> list[ChannelHit]:
            async with source.acquire() as conn:
                with metrics.timed(metrics.search_stages, stage):
                    return await run(conn, ctx.schema, *args, request.filter, limit)

        async def nothing() -> list[ChannelHit]:
            return []

        async def exactly(conn: asyncpg.Connection, schema: str, f: MemoryFilter) -> bool:
            """One user's few memories among many are compared exactly (see store EXACT_SCOPE)."""
            return f.user_id is not None and await repo.within_reach(conn, schema, f.owners())

        async def nearest(
            conn: asyncpg.Connection, schema: str, vector: np.ndarray, model: str, f: MemoryFilter, limit: int
        ) -> list[ChannelHit]:
            exact = await exactly(conn, schema, f)
            return await repo.vector_candidates(conn, schema, vector, model, f, limit, exact=exact)

        async def retrieval() -> list[ChannelHit]:
            assert second is not None
            centred = (await second).query

            async def run(conn: asyncpg.Connection, schema: str, f: MemoryFilter, limit: int) -> list[ChannelHit]:
                exact = await exactly(conn, schema, f)
                return await retrieval_store.candidates(conn, schema, centred, f, limit, exact=exact)

            return await channel("retrieval", run, source=self._nearest)

        window = reading.intent.window
        return Candidates(
            *await asyncio.gather(
                channel("vector", nearest, query.centring.query, ctx.embedding_model, source=self._nearest)
                if weights.vector > 0
                else nothing(),
                channel("keyword", repo.keyword_candidates, keyword)
                if keyword.tsquery and weights.keyword > 0
                else nothing(),
                channel("rule", repo.rule_candidates, reading.identifiers)
                if reading.identifiers and weights.rule > 0
                else nothing(),
                channel(
                    "time", repo.window_candidates, window.start, window.end, query.centring.query, ctx.embedding_model
                )
                if window
                else nothing(),
                retrieval() if second is not None else nothing(),
            )
        )

    async def _hydrate(
        self, conn: asyncpg.Connection, ctx: TenantContext, ids: list[UUID], query: Query
    ) -> dict[UUID, tuple[Memory, Similarity]]:
        if not ids:
            return {}
        return await repo.hydrate(
            conn, ctx.schema, ids, query.embedding, ctx.embedding_model, query.centring, query.retrieval
        )

    async def _keyword_query(self, ctx: TenantContext, tokens: list[str]) -> KeywordQuery:
        """IDF from ANALYZE's statistics on large tenants, from exact counts on small ones."""
        tokens = tokens[:MAX_QUERY_TOKENS]
        if not tokens:
            return KeywordQuery(tokens=[], weights=[], match_tokens=[])
        stats = await self._token_statistics(ctx)
        if stats is not None and stats.documents > EXACT_COUNT_LIMIT:
            frequencies = [stats.document_frequency(t) for t in tokens]
            return KeywordQuery.build(tokens, stats.documents, frequencies, self._settings.keyword_length_exponent)
        async with self._pool.acquire() as conn:
            documents, frequencies = await repo.token_frequencies(conn, ctx.schema, tokens, EXACT_COUNT_LIMIT)
        return KeywordQuery.build(tokens, documents, frequencies, self._settings.keyword_length_exponent)

    async def _token_statistics(self, ctx: TenantContext) -> TokenStatistics | None:
        cached = self._statistics.get(ctx.schema)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        async with self._pool.acquire() as conn:
            stats = await repo.token_statistics(conn, ctx.schema)
        self._statistics[ctx.schema] = (time.monotonic() + _STATISTICS_SECONDS, stats)
        return stats

    async def _query_embedding(self, ctx: TenantContext, model: str, query: str, user: str | None) -> np.ndarray:
        embedder = self._embedders.get(model)
        digest = hashlib.sha256(query.encode()).hexdigest()
        key = f"{query_cache_prefix(ctx.name, user)}{embedder.model_id}:{digest}"
        cached = await self._cache.get(key)
        if cached is not None:
            return np.frombuffer(cached, dtype=np.float32)
        with metrics.timed(metrics.search_stages, "embed"):  # a miss: the model runs
            vector = await embedder.embed_query(query)
        await self._cache.set(key, vector.astype(np.float32).tobytes())
        return vector


def query_cache_prefix(tenant: str, user: str | None) -> str:
    """Where a tenant's (and one user's) cached query vectors are kept: erasing a user or a
    tenant drops them by this prefix. The user is hashed: no user id is readable in the cache."""
    owner = hashlib.sha256(user.encode()).hexdigest()[:16] if user else "-"
    return f"{tenant_cache_prefix(tenant)}{owner}:"


def tenant_cache_prefix(tenant: str) -> str:
    """Where every cached query vector of a tenant is kept (a tenant name holds no ':')."""
    return f"engram:qemb:{tenant}:"


def other_language(memory: str, query: str) -> bool:
    """The memory cannot share the query's words: both have a known language, and they differ."""
    return "und" not in (memory, query) and memory != query


def log_search(
    ctx: TenantContext,
    request: SearchRequest,
    reading: Reading,
    found: Candidates,
    hits: list[SearchHit],
    seconds: float,
) -> None:
    """Every search at info level with its contents redacted; at debug level the query, the rewrite
    and each channel's top candidates, to see why a memory was (not) found."""
    if not log.isEnabledFor(logging.INFO):
        return
    sizes = {
        "vector": len(found.vector),
        "retrieval": len(found.retrieval),
        "keyword": len(found.keyword),
        "rule": len(found.identifiers),
    }
    log.info(
        "search",
        extra={
            "tenant": ctx.name,
            "query": f"<{len(request.query)} characters>",
            "rewritten": reading.rewritten is not None,
            "time_window": reading.intent.window is not None,
            "candidates": sizes | {"time": len(found.window)},
            "hits": len(hits),
            "ms": round(seconds * 1000, 1),
        },
    )
    if log.isEnabledFor(logging.DEBUG):
        top = {
            name: [(str(h.id), round(h.score, 4)) for h in channel[:5]]
            for name, channel in (
                ("vector", found.vector),
                ("retrieval", found.retrieval),
                ("keyword", found.keyword),
                ("rule", found.identifiers),
                ("time", found.window),
            )
        }
        log.debug(
            "search channels",
            extra={"tenant": ctx.name, "query": request.query, "rewrite": reading.rewritten, "top": top},
        )


def explain(
    reading: Reading,
    weights: Weights,
    settings: RetrievalSettings,
    noise: float,
    keyword: KeywordQuery,
    found: Candidates,
    fused: list[FusedHit],
    snippets: dict[UUID, str],
) -> Explanation:
    window = reading.intent.window
    lent = sorted((h for h in fused if h.channels.context > 0), key=lambda h: -h.channels.context)
    return Explanation(
        weights=weights,
        noise=noise,
        outside_window=settings.outside_window,
        cut_ratio=settings.cut_ratio,
        rewritten=reading.rewritten,
        rewrite_ms=reading.rewrite_ms,
        searched_text=reading.text,
        time_window=TimeFilter(phrase=window.phrase, start=window.start, end=window.end) if window else None,
        time_only=reading.intent.only_time,
        prefer_recent=reading.intent.recent,
        query_tokens=keyword.tokens,
        token_idf=dict(zip(keyword.tokens, keyword.weights, strict=True)),
        query_identifiers=reading.identifiers,
        candidates={
            Channel.vector: found.vector,
            Channel.retrieval: found.retrieval,
            Channel.keyword: found.keyword,
            Channel.rule: found.identifiers,
            Channel.time: found.window,
            Channel.context: [ChannelHit(id=h.id, score=h.channels.context, rank=i) for i, h in enumerate(lent, 1)],
        },
        fused=fused,
        snippets=snippets,
    )


def _failure_read(task: asyncio.Future[Centring]) -> None:
    """A second query the search stopped waiting for may still end in an outage's error (a cancel
    is only a request). Read here, it is not logged as a traceback: the search's 503 says it."""
    if not task.cancelled():
        task.exception()
