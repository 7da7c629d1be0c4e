"""Named SQL over one tenant's memories table. Every statement names the schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np
from pgvector import Vector

from engram.domain.centring import LANGUAGES, Centring
from engram.domain.fusion import Similarity
from engram.domain.keyword import LENGTH_PIVOT, MATCH_SCAN, KeywordQuery, TokenStatistics
from engram.domain.models import HistoryEvent, HistoryRow, Layer, Memory, MemoryFilter, MemoryType, Status
from engram.domain.search import ChannelHit
from engram.domain.tokenize import to_tsquery_literal
from engram.store.filters import Params, where

COLUMNS = """m.id, m.content, m.kind, m.type, m.layer, m.source, m.external_id, m.importance, m.language,
    m.created_at, m.updated_at, m.occurred_at, m.last_accessed_at, m.access_count, m.mentions, m.reinforced_at,
    m.pinned, m.status, m.superseded_by, m.session_id, m.task_id, m.tags, m.metadata, m.embedding_model,
    m.forgotten_at, m.derived_from, m.newer_id AS newer, m.user_id, m.agent_id"""
# Who a memory belongs to, as indexed: its user, or '' for the tenant's own (a user id is never empty).
OWNER = "coalesce(m.user_id, '')"
# Up to this many memories in a user's reach, a vector query reads them all (exact, through the
# owner index) instead of walking the HNSW graph, which a filter this selective starves (a user
# of 100 among 100,000 memories: the walk gives up before it finds the nearest).
EXACT_SCOPE = 5000


@dataclass(frozen=True)
class MemoryRow:
    """A memory ready to insert: content plus everything derived from it."""

    content: str
    kind: str
    type: str
    layer: str
    source: str | None
    external_id: str | None
    importance: float
    language: str
    occurred_at: datetime | None
    session_id: str | None
    task_id: str | None
    tags: list[str]
    metadata: dict[str, Any]
    dedup_key: str
    identifiers: list[str]
    search_tokens: str
    embedding: np.ndarray
    embedding_model: str
    slot: str | None = None
    pinned: bool = False
    derived_from: tuple[UUID, ...] = ()
    user_id: str | None = None
    agent_id: str | None = None
    created_at: datetime | None = None  # None: now (a memory brought from another store keeps its own)

    @property
    def owner(self) -> str:
        return self.user_id or ""


def to_memory(record: asyncpg.Record | dict[str, Any]) -> Memory:
    data = dict(record)
    data.pop("similarity", None)
    data.pop("dedup_key", None)
    return Memory.model_validate(data)


async def insert_many(conn: asyncpg.Connection, schema: str, rows: list[MemoryRow]) -> dict[str, Memory]:
    """Insert in one statement, skipping any row whose active exact duplicate exists (or comes
    earlier in ``rows``): atomic whatever the concurrency. Returns the inserted memories by dedup_key."""
    records = await conn.fetch(
        f"""INSERT INTO {schema}.memories AS m
              (content, kind, type, layer, source, external_id, importance, language, occurred_at, session_id,
               task_id, tags, metadata, dedup_key, identifiers, search_tokens, embedding, embedding_model,
               derived_from, slot, pinned, user_id, agent_id, created_at, updated_at)
            SELECT t.content, t.kind, t.type, t.layer, t.source, t.external_id, t.importance, t.language,
                   t.occurred_at, t.session_id, t.task_id,
                   ARRAY(SELECT jsonb_array_elements_text(t.tags::jsonb)), t.metadata::jsonb, t.dedup_key,
                   ARRAY(SELECT jsonb_array_elements_text(t.identifiers::jsonb)), t.search_tokens::tsvector,
                   t.embedding, $17, t.derived_from::uuid[], t.slot, t.pinned, t.user_id, t.agent_id,
                   coalesce(t.created_at, now()), coalesce(t.created_at, now())
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::real[], $7::text[],
                        $8::timestamptz[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
                        $14::text[], $15::text[], $16::vector[], $18::text[], $19::text[], $20::text[],
                        $21::boolean[], $22::text[], $23::text[], $24::timestamptz[])
                 WITH ORDINALITY AS t(content, type, layer, source, external_id, importance, language,
                                      occurred_at, session_id, task_id, tags, metadata, dedup_key,
                                      identifiers, search_tokens, embedding, derived_from, kind, slot, pinned,
                                      user_id, agent_id, created_at, position)
            ORDER BY t.position
            ON CONFLICT (dedup_key) WHERE status = 'active' DO NOTHING
            RETURNING {COLUMNS}, m.dedup_key""",
        [r.content for r in rows],
        [r.type for r in rows],
        [r.layer for r in rows],
        [r.source for r in rows],
        [r.external_id for r in rows],
        [r.importance for r in rows],
        [r.language for r in rows],
        [r.occurred_at for r in rows],
        [r.session_id for r in rows],
        [r.task_id for r in rows],
        [json.dumps(r.tags) for r in rows],
        [json.dumps(r.metadata) for r in rows],
        [r.dedup_key for r in rows],
        [json.dumps(r.identifiers) for r in rows],
        [r.search_tokens for r in rows],
        [Vector(r.embedding) for r in rows],
        rows[0].embedding_model,
        ["{" + ",".join(map(str, r.derived_from)) + "}" for r in rows],
        [r.kind for r in rows],
        [r.slot for r in rows],
        [r.pinned for r in rows],
        [r.user_id for r in rows],
        [r.agent_id for r in rows],
        [r.created_at for r in rows],
    )
    return {r["dedup_key"]: to_memory(r) for r in records}


async def lock_writes(conn: asyncpg.Connection, schema: str) -> int:
    """Serialise whatever changes the tenant's memories until the transaction ends, so two writers
    of the same fact in other words cannot both miss each other (exact copies are also stopped by
    a unique index). The table lock every change needs is taken first, before any row lock: a
    reindex switching models waits for the change, or the change for the switch, never both.
    Returns the tenant's generation before this transaction (which moves it on)."""
    key = f"{schema}.writes".replace("'", "''")  # a literal: a statement without parameters may hold several
    await conn.execute(
        f"SELECT pg_advisory_xact_lock(hashtext('{key}')); LOCK TABLE {schema}.memories IN ROW EXCLUSIVE MODE"
    )
    return await conn.fetchval(f"UPDATE {schema}.meta SET generation = generation + 1 RETURNING generation - 1")


async def current_state(conn: asyncpg.Connection, schema: str) -> tuple[str, int]:
    """The model of the tenant's vectors now (``engram reindex`` changes it) and its generation."""
    row = await conn.fetchrow(f"SELECT embedding_model, generation FROM {schema}.meta")
    return row["embedding_model"], row["generation"]


async def nearest_active(
    conn: asyncpg.Connection,
    schema: str,
    rows: list[MemoryRow],
    limit: int,
    floors: list[float],
    exact: bool = False,
) -> list[list[tuple[Memory, float]]]:
    """For each row, the most similar active facts of its owner and layer (and session/task) at or
    above its floor; ``conn`` walks the HNSW index, as for vector_candidates, unless ``exact``
    (every row's owner holds few memories: all of theirs are compared)."""
    records = await conn.fetch(
        f"""SELECT t.position, n.* FROM unnest($1::vector[], $2::text[], $3::text[], $4::text[], $6::float8[],
                                               $8::text[])
                 WITH ORDINALITY AS t(v, layer, session_id, task_id, floor, owner, position)
            CROSS JOIN LATERAL (
                SELECT {COLUMNS}, 1 - (m.embedding <=> t.v) AS similarity FROM {schema}.memories m
                WHERE {_model_is(schema, "$7")} AND m.status = 'active' AND m.kind = 'fact'
                  AND m.layer = t.layer AND {OWNER} = t.owner
                  AND (t.layer <> 'session' OR m.session_id = t.session_id)
                  AND (t.layer <> 'task' OR m.task_id = t.task_id)
                ORDER BY {nearest_order("t.v", exact)} LIMIT $5) AS n
            WHERE n.similarity >= t.floor""",
        [Vector(r.embedding) for r in rows],
        [r.layer for r in rows],
        [r.session_id for r in rows],
        [r.task_id for r in rows],
        limit,
        floors,
        rows[0].embedding_model,
        [r.owner for r in rows],
    )
    return _per_row(records, len(rows))


def nearest_order(vector: str, exact: bool, column: str = "m.embedding") -> str:
    """Nearest first: through the HNSW index, or (``exact``) by an expression no index serves, so
    the planner reads the owner's rows through the owner index and sorts them."""
    return f"({column} <=> {vector}) + 0" if exact else f"{column} <=> {vector}"


async def owner_sizes(conn: asyncpg.Connection, schema: str, owners: list[str]) -> dict[str, int]:
    """How many memories each owner ('' the tenant's own) holds, counted up to EXACT_SCOPE + 1."""
    records = await conn.fetch(
        f"""SELECT o.owner, (SELECT count(*) FROM (SELECT 1 FROM {schema}.memories m
                                                 WHERE {OWNER} = o.owner LIMIT $2 + 1) AS n) AS size
            FROM unnest($1::text[]) AS o(owner)""",
        owners,
        EXACT_SCOPE,
    )
    return {r["owner"]: int(r["size"]) for r in records}


async def within_reach(conn: asyncpg.Connection, schema: str, owners: list[str]) -> bool:
    """Whether these owners hold few enough memories together to be compared exactly."""
    if not owners or owners == [""]:  # the tenant's own: the index walk, as ever
        return False
    return sum((await owner_sizes(conn, schema, owners)).values()) <= EXACT_SCOPE


def _per_row(records: list[asyncpg.Record], rows: int) -> list[list[tuple[Memory, float]]]:
    """Records of a lateral join over the rows (by ``position``), each memory with its similarity."""
    found: list[list[tuple[Memory, float]]] = [[] for _ in range(rows)]
    for r in records:
        data = dict(r)
        position, similarity = data.pop("position"), data.pop("similarity")
        found[position - 1].append((Memory.model_validate(data), float(similarity)))
    return found


async def touch(conn: asyncpg.Connection, schema: str, memory_id: UUID, times: int = 1) -> Memory:
    """The fact was stated again: one more mention, and its forgetting clock starts over."""
    record = await conn.fetchrow(
        f"""UPDATE {schema}.memories m SET mentions = mentions + $2, reinforced_at = now()
            WHERE m.id = $1 RETURNING {COLUMNS}""",
        memory_id,
        times,
    )
    return to_memory(record)


async def active_in_slots(
    conn: asyncpg.Connection, schema: str, rows: list[MemoryRow], limit: int
) -> list[list[tuple[Memory, float]]]:
    """For each row with a slot, the active facts of that slot, owner and layer (and session/task),
    with their similarity to the row: every statement about the same thing, in any wording."""
    records = await conn.fetch(
        f"""SELECT t.position, n.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::vector[],
                                               $8::text[])
                 WITH ORDINALITY AS t(slot, layer, session_id, task_id, v, owner, position)
            CROSS JOIN LATERAL (
                SELECT {COLUMNS},
                       CASE WHEN {_model_is(schema, "$7")} THEN 1 - (m.embedding <=> t.v) ELSE 0 END AS similarity
                FROM {schema}.memories m
                WHERE m.slot = t.slot AND m.status = 'active' AND m.kind = 'fact' AND m.layer = t.layer
                  AND {OWNER} = t.owner
                  AND (t.layer <> 'session' OR m.session_id = t.session_id)
                  AND (t.layer <> 'task' OR m.task_id = t.task_id)
                ORDER BY m.created_at DESC LIMIT $6) AS n
            WHERE t.slot IS NOT NULL""",
        [r.slot for r in rows],
        [r.layer for r in rows],
        [r.session_id for r in rows],
        [r.task_id for r in rows],
        [Vector(r.embedding) for r in rows],
        limit,
        rows[0].embedding_model,
        [r.owner for r in rows],
    )
    return _per_row(records, len(rows))


async def get_active_by_dedup_keys(conn: asyncpg.Connection, schema: str, keys: list[str]) -> dict[str, Memory]:
    records = await conn.fetch(
        f"""SELECT {COLUMNS}, m.dedup_key FROM {schema}.memories m
            WHERE m.dedup_key = ANY($1::text[]) AND m.status = 'active'""",
        keys,
    )
    return {r["dedup_key"]: to_memory(r) for r in records}


async def get(conn: asyncpg.Connection, schema: str, memory_id: UUID, *, lock: bool = False) -> Memory | None:
    suffix = " FOR UPDATE" if lock else ""
    record = await conn.fetchrow(f"SELECT {COLUMNS} FROM {schema}.memories m WHERE m.id = $1{suffix}", memory_id)
    return to_memory(record) if record else None


async def get_many(conn: asyncpg.Connection, schema: str, ids: list[UUID]) -> list[Memory]:
    records = await conn.fetch(f"SELECT {COLUMNS} FROM {schema}.memories m WHERE m.id = ANY($1::uuid[])", ids)
    return [to_memory(r) for r in records]


async def unmark_newer_than(conn: asyncpg.Connection, schema: str, memory_id: UUID) -> list[Memory]:
    """The marks pointing at a memory are lifted (it was forgotten: what it may have replaced is
    current again); the memories unmarked."""
    records = await conn.fetch(
        f"""UPDATE {schema}.memories m SET newer_id = NULL WHERE m.newer_id = $1 RETURNING {COLUMNS}""", memory_id
    )
    return [to_memory(r) for r in records]


async def move_marks(conn: asyncpg.Connection, schema: str, retired: UUID, holder: UUID) -> list[Memory]:
    """The marks pointing at a memory that was just retired point at what retired it now (what it
    may have replaced, its successor may have too); the memories whose mark moved."""
    records = await conn.fetch(
        f"""UPDATE {schema}.memories m SET newer_id = $2
            WHERE m.newer_id = $1 AND m.id <> $2 AND m.status = 'active' RETURNING {COLUMNS}""",
        retired,
        holder,
    )
    return [to_memory(r) for r in records]


async def counts(conn: asyncpg.Connection, schema: str, f: MemoryFilter) -> list[asyncpg.Record]:
    """How many memories of each (type, layer, status) the filter's user reaches (its statuses aside)."""
    params = Params()
    condition = where(f.model_copy(update={"statuses": list(Status)}), params)
    return await conn.fetch(
        f"SELECT m.type, m.layer, m.status, count(*) AS n FROM {schema}.memories m WHERE {condition} GROUP BY 1, 2, 3",
        *params.values,
    )


async def supersession_chain(conn: asyncpg.Connection, schema: str, memory_id: UUID) -> list[Memory]:
    """The memories that replaced one another around ``memory_id``, oldest first."""
    records = await conn.fetch(
        f"""WITH RECURSIVE older(id, depth) AS (
                SELECT $1::uuid, 0
                UNION
                SELECT m.id, o.depth - 1 FROM {schema}.memories m JOIN older o ON m.superseded_by = o.id
                WHERE o.depth > -100),
            newer(id, depth) AS (
                SELECT $1::uuid, 0
                UNION
                SELECT m.superseded_by, n.depth + 1 FROM {schema}.memories m JOIN newer n ON m.id = n.id
                WHERE m.superseded_by IS NOT NULL AND n.depth < 100)
            SELECT {COLUMNS}, c.depth FROM (SELECT * FROM older UNION SELECT * FROM newer) AS c
            JOIN {schema}.memories m ON m.id = c.id ORDER BY c.depth""",
        memory_id,
    )
    return [to_memory({k: v for k, v in r.items() if k != "depth"}) for r in records]


async def superseded_links(conn: asyncpg.Connection, schema: str) -> dict[UUID, UUID]:
    """Each superseded memory -> the memory that superseded it."""
    records = await conn.fetch(
        f"""SELECT m.id, m.superseded_by FROM {schema}.memories m
            WHERE m.status = 'superseded' AND m.superseded_by IS NOT NULL"""
    )
    return {r["id"]: r["superseded_by"] for r in records}


async def marked_ids(conn: asyncpg.Connection, schema: str) -> list[UUID]:
    """The active memories a newer one may have replaced."""
    records = await conn.fetch(
        f"SELECT m.id FROM {schema}.memories m WHERE m.newer_id IS NOT NULL AND m.status = 'active'"
    )
    return [r["id"] for r in records]


async def list_page(
    conn: asyncpg.Connection,
    schema: str,
    f: MemoryFilter,
    limit: int,
    after: tuple[datetime, UUID] | None,
) -> list[Memory]:
    """Newest first, keyset-paged on (created_at, id)."""
    params = Params()
    condition = where(f, params)
    if after is not None:
        condition += f" AND (m.created_at, m.id) < ({params.add(after[0])}, {params.add(after[1])})"
    records = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {schema}.memories m WHERE {condition}
            ORDER BY m.created_at DESC, m.id DESC LIMIT {params.add(limit)}""",
        *params.values,
    )
    return [to_memory(r) for r in records]


async def daily_counts(conn: asyncpg.Connection, schema: str, f: MemoryFilter) -> list[tuple[date, str, int]]:
    """How many of the filtered memories happened on each UTC day (its creation if unknown), by type."""
    params = Params()
    records = await conn.fetch(
        f"""SELECT (coalesce(m.occurred_at, m.created_at) AT TIME ZONE 'UTC')::date AS day, m.type, count(*) AS n
            FROM {schema}.memories m WHERE {where(f, params)} GROUP BY 1, 2""",
        *params.values,
    )
    return [(r["day"], r["type"], r["n"]) for r in records]


async def update(conn: asyncpg.Connection, schema: str, memory_id: UUID, changes: dict[str, Any]) -> Memory:
    """Set the given columns (names come from code, never from callers) and bump updated_at."""
    params = Params(memory_id)
    sets = []
    for column, value in changes.items():
        cast = "::tsvector" if column == "search_tokens" else ""
        sets.append(f"{column} = {params.add(value)}{cast}")
    record = await conn.fetchrow(
        f"""UPDATE {schema}.memories m SET {", ".join(sets)}, updated_at = now()
            WHERE m.id = $1 RETURNING {COLUMNS}""",
        *params.values,
    )
    return to_memory(record)


async def delete(conn: asyncpg.Connection, schema: str, memory_id: UUID) -> None:
    await conn.execute(f"UPDATE {schema}.memories SET superseded_by = NULL WHERE superseded_by = $1", memory_id)
    await conn.execute(f"DELETE FROM {schema}.memories WHERE id = $1", memory_id)


async def add_history(conn: asyncpg.Connection, schema: str, *rows: HistoryRow) -> None:
    """Record events in the memories' histories, in order, in one statement."""
    if not rows:
        return
    await conn.execute(
        f"""INSERT INTO {schema}.memory_history (memory_id, event, actor, content, details)
            SELECT t.memory_id, t.event, t.actor, t.content, t.details::jsonb
            FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY
                 AS t(memory_id, event, actor, content, details, position)
            ORDER BY t.position""",
        [r.memory_id for r in rows],
        [r.event.value for r in rows],
        [r.actor for r in rows],
        [r.content for r in rows],
        [json.dumps(dict(r.details)) for r in rows],
    )


# What a history event keeps once the memory it tells of, or quotes, is purged: ids, numbers and
# states, never a text (content, previous_content, a reason that may quote it, a source).
STRUCTURAL_DETAILS = ["superseded_by", "newer", "merged_with", "similarity", "previous_status", "by_caller"]
# The keys under which an event of another memory names the memory whose text it quotes.
QUOTING = ("superseded_by", "newer", "merged_with")


async def erase_history_content(conn: asyncpg.Connection, schema: str, memory_id: UUID) -> int:
    """A purge removes every copy of the content: from the memory's own events (their content, the
    text before an edit, the texts of the repeats and merges it took in, the forget reason), and
    from the events of other memories that quote it (a retired memory's "superseded by", a mark).
    The events themselves stay, with their ids and states. Returns the events scrubbed."""
    quoting = " OR ".join(f"h.details->>'{key}' = $1::text" for key in QUOTING)
    status = await conn.execute(
        f"""UPDATE {schema}.memory_history h
            SET content = CASE WHEN h.memory_id = $1 THEN NULL ELSE h.content END,
                details = (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{{}}'::jsonb)
                           FROM jsonb_each(h.details) AS e WHERE e.key = ANY($2::text[]))
            WHERE h.memory_id = $1 OR {quoting}""",
        memory_id,
        STRUCTURAL_DETAILS,
    )
    return int(status.split()[-1])


async def history(conn: asyncpg.Connection, schema: str, memory_id: UUID) -> list[HistoryEvent]:
    records = await conn.fetch(
        f"""SELECT id, memory_id, event, at, actor, content, details FROM {schema}.memory_history
            WHERE memory_id = $1 ORDER BY id""",
        memory_id,
    )
    return [HistoryEvent.model_validate(dict(r)) for r in records]


# -- search channels -------------------------------------------------------------------------


def _model_is(schema: str, placeholder: str) -> str:
    """True while the tenant's vectors are still of the query's model: after `engram reindex` swaps
    models, a process that has not noticed yet gets no vector rows instead of a dimension error."""
    return f"(SELECT x.embedding_model FROM {schema}.meta x) = {placeholder}"


async def language_sums(conn: asyncpg.Connection, schema: str, model: str) -> dict[str, tuple[np.ndarray, int]]:
    """The sum of the memories' vectors and their number, per language (kept by triggers); none
    while the tenant's vectors are of another model than the query's."""
    records = await conn.fetch(
        f"""SELECT s.language, s.total, s.count FROM {schema}.vector_sums s
            WHERE s.count > 0 AND {_model_is(schema, "$1")}""",
        model,
    )
    return {r["language"]: (r["total"].to_numpy().astype(np.float32), int(r["count"])) for r in records}


async def vector_candidates(
    conn: asyncpg.Connection,
    schema: str,
    embedding: np.ndarray,
    model: str,
    f: MemoryFilter,
    limit: int,
    exact: bool = False,
) -> list[ChannelHit]:
    """The nearest memories; ``conn`` walks the HNSW index (a NearestPool's, or one set up by
    walking_the_index, store/db.py), or the planner may sort the whole table instead; ``exact``:
    the filter's user holds few memories, all of them are compared."""
    params = Params(embedding, model)
    records = await conn.fetch(
        f"""SELECT m.id, 1 - (m.embedding <=> $1) AS score FROM {schema}.memories m
            WHERE {_model_is(schema, "$2")} AND {where(f, params)}
            ORDER BY {nearest_order("$1", exact)} LIMIT {params.add(limit)}""",
        *params.values,
    )
    return _hits(records)


async def token_frequencies(
    conn: asyncpg.Connection, schema: str, tokens: list[str], cap: int
) -> tuple[int, list[int]]:
    """(number of memories, in how many memories each token occurs); both counted up to ``cap`` + 1."""
    record = await conn.fetchrow(
        f"""SELECT
              greatest(
                (SELECT c.reltuples::bigint FROM pg_catalog.pg_class c WHERE c.oid = $3::regclass),
                (SELECT count(*) FROM (SELECT 1 FROM {schema}.memories LIMIT $2 + 1) AS n)) AS documents,
              ARRAY(
                SELECT (SELECT count(*) FROM (SELECT 1 FROM {schema}.memories d
                                              WHERE d.search_tokens @@ t.q::tsquery LIMIT $2 + 1) AS c)
                FROM unnest($1::text[]) WITH ORDINALITY AS t(q, i) ORDER BY t.i) AS frequencies""",
        [to_tsquery_literal([t]) for t in tokens],
        cap,
        f"{schema}.memories",
    )
    return int(record["documents"]), list(record["frequencies"])


async def token_statistics(conn: asyncpg.Connection, schema: str) -> TokenStatistics | None:
    """The tokens ANALYZE found most common, or None before the table was first analysed."""
    record = await conn.fetchrow(
        """SELECT c.reltuples::bigint AS documents,
                  s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs
           FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_catalog.pg_stats s
             ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'search_tokens'
           WHERE n.nspname = $1 AND c.relname = 'memories'""",
        schema.strip('"'),
    )
    if record is None or record["documents"] < 0:
        return None
    elems, freqs = record["elems"] or [], record["freqs"] or []
    # For tsvector columns the frequency list ends with min, max and null frequency.
    common = dict(zip(elems, freqs[: len(elems)], strict=True))
    floor = freqs[len(elems)] if len(freqs) > len(elems) else 0.0
    return TokenStatistics(documents=int(record["documents"]), common=common, floor=floor)


async def keyword_candidates(
    conn: asyncpg.Connection, schema: str, query: KeywordQuery, f: MemoryFilter, limit: int
) -> list[ChannelHit]:
    """Memories holding the query's rarest tokens; score = the share of the query's idf they hold,
    discounted for a long memory (domain/keyword.py length_factor). At most MATCH_SCAN of the
    matches are scored: when even the rarest token is common (a query of everyday words in a large
    tenant) the channel scores a sample, and the vector channel leads."""
    params = Params(query.tsquery, query.total_weight)
    exponent = params.add(query.length_exponent)
    length = f"least(1.0, power({LENGTH_PIVOT}.0 / greatest(length(m.search_tokens), 1), {exponent}::float8))"
    held = " + ".join(
        f"CASE WHEN m.search_tokens @@ {params.add(to_tsquery_literal([token]))}::tsquery "
        f"THEN {params.add(weight)}::float8 ELSE 0 END"
        for token, weight in zip(query.tokens, query.weights, strict=True)
    )
    records = await conn.fetch(
        f"""SELECT m.id, ({held}) / $2 * {length} AS score
            FROM (SELECT x.id, x.search_tokens FROM {schema}.memories x
                  WHERE x.search_tokens @@ $1::tsquery AND {where(f, params, alias="x")}
                  LIMIT {params.add(MATCH_SCAN)}) AS m
            ORDER BY score DESC, m.id LIMIT {params.add(limit)}""",
        *params.values,
    )
    return _hits(records)


async def rule_candidates(
    conn: asyncpg.Connection, schema: str, identifiers: list[str], f: MemoryFilter, limit: int
) -> list[ChannelHit]:
    """Memories sharing identifiers with the query; score = fraction of the query's identifiers matched."""
    params = Params(identifiers)
    records = await conn.fetch(
        f"""SELECT m.id,
                cardinality(ARRAY(SELECT unnest(m.identifiers) INTERSECT SELECT unnest($1::text[])))::float8
                  / cardinality($1::text[]) AS score
            FROM {schema}.memories m
            WHERE m.identifiers && $1::text[] AND {where(f, params)}
            ORDER BY score DESC, m.importance DESC, m.id LIMIT {params.add(limit)}""",
        *params.values,
    )
    return _hits(records)


async def window_candidates(
    conn: asyncpg.Connection,
    schema: str,
    start: datetime,
    end: datetime,
    embedding: np.ndarray,
    model: str,
    f: MemoryFilter,
    limit: int,
) -> list[ChannelHit]:
    """Memories of a time window, the closest to the query first. A wide window is cut to its
    latest 2,000 memories before they are compared, so its cost stays bounded."""
    params = Params(start, end, embedding, model)
    records = await conn.fetch(
        f"""SELECT w.id, 1.0::float8 AS score FROM (
                SELECT m.id, m.embedding FROM {schema}.memories m
                WHERE coalesce(m.occurred_at, m.created_at) >= $1 AND coalesce(m.occurred_at, m.created_at) < $2
                  AND {where(f, params)}
                ORDER BY coalesce(m.occurred_at, m.created_at) DESC LIMIT 2000) AS w
            ORDER BY CASE WHEN {_model_is(schema, "$4")} THEN w.embedding <=> $3 END, w.id
            LIMIT {params.add(limit)}""",
        *params.values,
    )
    return _hits(records)


async def window_memories(
    conn: asyncpg.Connection, schema: str, start: datetime, end: datetime, f: MemoryFilter, limit: int
) -> list[Memory]:
    """The memories of a time window for a question about that time alone: events first, then the
    more important, then the later ones."""
    params = Params(start, end)
    records = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {schema}.memories m
            WHERE coalesce(m.occurred_at, m.created_at) >= $1 AND coalesce(m.occurred_at, m.created_at) < $2
              AND {where(f, params)}
            ORDER BY m.type = 'event' DESC, m.importance DESC, coalesce(m.occurred_at, m.created_at) DESC, m.id
            LIMIT {params.add(limit)}""",
        *params.values,
    )
    return [to_memory(r) for r in records]


async def neighbours(
    conn: asyncpg.Connection, schema: str, ids: list[UUID], radius: int, f: MemoryFilter
) -> list[tuple[UUID, UUID, int]]:
    """(anchor, neighbour, distance) for the memories written just before and after each anchor in
    its conversation (same session_id), among those the filter admits."""
    params = Params(ids, radius)
    admitted = where(f, params)
    records = await conn.fetch(
        f"""SELECT a.id AS anchor, n.id AS neighbour, n.distance FROM {schema}.memories a
            CROSS JOIN LATERAL (
                (SELECT m.id, row_number() OVER (ORDER BY m.seq DESC) AS distance FROM {schema}.memories m
                 WHERE m.session_id = a.session_id AND m.seq < a.seq AND {admitted}
                 ORDER BY m.seq DESC LIMIT $2)
                UNION ALL
                (SELECT m.id, row_number() OVER (ORDER BY m.seq) AS distance FROM {schema}.memories m
                 WHERE m.session_id = a.session_id AND m.seq > a.seq AND {admitted}
                 ORDER BY m.seq LIMIT $2)) AS n
            WHERE a.id = ANY($1::uuid[]) AND a.session_id IS NOT NULL""",
        *params.values,
    )
    return [(r["anchor"], r["neighbour"], int(r["distance"])) for r in records]


async def admitted(conn: asyncpg.Connection, schema: str, ids: list[UUID], f: MemoryFilter) -> list[UUID]:
    """Those of ``ids`` the filter admits."""
    params = Params(ids)
    condition = where(f, params)
    records = await conn.fetch(
        f"SELECT m.id FROM {schema}.memories m WHERE m.id = ANY($1::uuid[]) AND {condition}", *params.values
    )
    return [r["id"] for r in records]


async def hydrate(
    conn: asyncpg.Connection,
    schema: str,
    ids: list[UUID],
    embedding: np.ndarray,
    model: str,
    centring: Centring,
    retrieval: Centring | None = None,
) -> dict[UUID, tuple[Memory, Similarity]]:
    """Full rows of the candidates, each with its exact cosine similarity to the query, and its
    cosine once both are centred on their language's mean (see domain/centring.py); with
    ``retrieval``, the same of its second vector (0 while it has none)."""
    params = Params(ids, embedding, model)
    first = _centred("m.embedding", centring, params)
    second = "0::float8 AS retrieval_centred, 0::float8 AS retrieval_cosine"
    if retrieval is not None:
        query = params.add(retrieval.query)
        second = f"""coalesce({_centred("m.retrieval_embedding", retrieval, params)}, 0) AS retrieval_centred,
                     coalesce(1 - (m.retrieval_embedding <=> {query}), 0) AS retrieval_cosine"""
    records = await conn.fetch(
        f"""SELECT {COLUMNS},
                   CASE WHEN {_model_is(schema, "$3")} THEN 1 - (m.embedding <=> $2) ELSE 0 END AS similarity,
                   CASE WHEN {_model_is(schema, "$3")} THEN {first} ELSE 0 END AS centred,
                   {second}
            FROM {schema}.memories m WHERE m.id = ANY($1::uuid[])""",
        *params.values,
    )
    out = {}
    for r in records:
        data = dict(r)
        similarity = Similarity(
            float(data.pop("similarity")),
            float(data.pop("centred")),
            float(data.pop("retrieval_cosine")),
            float(data.pop("retrieval_centred")),
        )
        out[r["id"]] = (to_memory(data), similarity)
    return out


def _centred(column: str, centring: Centring, params: Params) -> str:
    """The cosine of ``column`` and the centred query once the column is centred on its memory's
    language mean: (v.q - mean.q) / |v - mean|, with |v - mean|^2 = |v|^2 - 2 v.mean + |mean|^2."""
    means = [centring.mean(language) for language in LANGUAGES]
    query = params.add(centring.query)
    mean = [params.add(m) for m in means]
    dot = [params.add(float(np.dot(m, centring.query))) for m in means]
    square = [params.add(float(np.dot(m, m))) for m in means]

    def by_language(values: list[str], cast: str) -> str:
        zh, en, other = (f"{v}::{cast}" for v in values)
        return f"CASE m.language WHEN 'zh' THEN {zh} WHEN 'en' THEN {en} ELSE {other} END"

    return f"""(-({column} <#> {query}::vector) - {by_language(dot, "float8")})
               / sqrt(greatest(1e-12, vector_norm({column}) ^ 2 + 2 * ({column} <#> {by_language(mean, "vector")})
                               + {by_language(square, "float8")}))"""


async def add_uses(conn: asyncpg.Connection, schema: str, uses: dict[UUID, tuple[int, datetime]]) -> None:
    """Add each memory's uses (times a search returned it, and when the latest was)."""
    async with conn.transaction():
        # Access statistics are advisory: not waiting for the WAL flush saves a disk sync; a crash
        # can lose the last fraction of a second of counts, never a memory.
        await conn.execute("SET LOCAL synchronous_commit = off")
        await conn.execute(
            # Rows are locked in id order, as every multi-row update here does: no deadlocks.
            f"""UPDATE {schema}.memories m
                SET access_count = m.access_count + u.n,
                    last_accessed_at = GREATEST(m.last_accessed_at, u.at),
                    reinforced_at = GREATEST(m.reinforced_at, u.at)
                FROM (SELECT x.id, t.n, t.at FROM unnest($1::uuid[], $2::int[], $3::timestamptz[]) AS t(id, n, at)
                      JOIN {schema}.memories x ON x.id = t.id ORDER BY x.id FOR UPDATE OF x) u
                WHERE m.id = u.id""",
            list(uses),
            [n for n, _ in uses.values()],
            [at for _, at in uses.values()],
        )


def _hits(records: list[asyncpg.Record]) -> list[ChannelHit]:
    return [ChannelHit(id=r["id"], score=float(r["score"]), rank=i) for i, r in enumerate(records, start=1)]


async def decay_inputs(conn: asyncpg.Connection, schema: str, owner: str | None = None) -> list[asyncpg.Record]:
    """What the decay score needs, for every active long-term memory (of one user, if given)."""
    return await conn.fetch(
        f"""SELECT m.id, left(m.content, 200) AS content, m.importance, m.access_count, m.mentions,
                   m.created_at, m.reinforced_at, m.kind, m.type, m.pinned
            FROM {schema}.memories m WHERE m.status = 'active' AND m.layer = 'long_term'
              AND ($1::text IS NULL OR {OWNER} = $1)""",
        owner,
    )


async def expired(
    conn: asyncpg.Connection,
    schema: str,
    layers: Mapping[Layer, datetime],
    types: Mapping[MemoryType, datetime],
    owner: str | None = None,
) -> list[Memory]:
    """Active memories (of one user, if given) stored before their layer's cutoff or their type's."""
    records = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {schema}.memories m WHERE m.status = 'active'
              AND (m.created_at < (SELECT c.before FROM unnest($1::text[], $2::timestamptz[]) AS c(layer, before)
                                   WHERE c.layer = m.layer)
                   OR m.created_at < (SELECT c.before FROM unnest($3::text[], $4::timestamptz[]) AS c(type, before)
                                      WHERE c.type = m.type))
              AND ($5::text IS NULL OR {OWNER} = $5)
            ORDER BY m.created_at""",
        [layer.value for layer in layers],
        list(layers.values()),
        [type_.value for type_ in types],
        list(types.values()),
        owner,
    )
    return [to_memory(r) for r in records]


async def purgeable(
    conn: asyncpg.Connection, schema: str, forgotten_before: datetime, owner: str | None = None
) -> list[UUID]:
    records = await conn.fetch(
        f"""SELECT m.id FROM {schema}.memories m
            WHERE m.status = 'forgotten' AND m.forgotten_at < $1 AND ($2::text IS NULL OR {OWNER} = $2)
            ORDER BY m.forgotten_at""",
        forgotten_before,
        owner,
    )
    return [r["id"] for r in records]


async def active_with_vectors(
    conn: asyncpg.Connection, schema: str, limit: int, owner: str | None = None
) -> list[tuple[Memory, np.ndarray]]:
    """The most recently used active long-term facts (of one owner, '' the tenant's own, if given),
    with their vectors."""
    records = await conn.fetch(
        f"""SELECT {COLUMNS}, m.embedding FROM {schema}.memories m
            WHERE m.status = 'active' AND m.layer = 'long_term' AND m.kind = 'fact'
              AND ($2::text IS NULL OR {OWNER} = $2)
            ORDER BY coalesce(m.last_accessed_at, m.created_at) DESC LIMIT $1""",
        limit,
        owner,
    )
    out = []
    for r in records:
        data = dict(r)
        vector = data.pop("embedding").to_numpy().astype(np.float32)
        out.append((Memory.model_validate(data), vector))
    return out


async def users(conn: asyncpg.Connection, schema: str, prefix: str, after: str, limit: int) -> list[asyncpg.Record]:
    """The users owning memories, by id (after ``after``, starting with ``prefix``), each with their
    counts by status and when their newest memory was stored: one pass over the owner index."""
    return await conn.fetch(
        f"""SELECT {OWNER} AS user_id,
                   count(*) FILTER (WHERE m.status = 'active') AS active,
                   count(*) FILTER (WHERE m.status = 'superseded') AS superseded,
                   count(*) FILTER (WHERE m.status = 'forgotten') AS forgotten,
                   max(m.created_at) AS last_written_at
            FROM {schema}.memories m
            WHERE {OWNER} > $1 AND {OWNER} LIKE $2 || '%'
            GROUP BY {OWNER} ORDER BY {OWNER} LIMIT $3""",
        after,
        prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),
        limit,
    )
