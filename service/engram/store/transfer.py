"""SQL of export and import: memories read in one snapshot, a page at a time, and memories of
another engram inserted as they were (same ids, states, times and history)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
from pgvector import Vector

from engram.domain.models import Memory
from engram.domain.transfer import ExportedEvent
from engram.store.memories import COLUMNS, OWNER, MemoryRow, to_memory

PAGE = 500


async def snapshot(
    conn: asyncpg.Connection, schema: str, owner: str | None = None
) -> AsyncIterator[list[tuple[Memory, list[ExportedEvent]]]]:
    """Every memory of the tenant (or of one user, ``owner``; any status) with its history, oldest
    first, a page at a time, as of one moment. Run inside a REPEATABLE READ transaction: later
    writes do not tear the export."""
    after: tuple[Any, UUID] | None = None
    while True:
        records = await conn.fetch(
            f"""SELECT {COLUMNS} FROM {schema}.memories m
                WHERE ($1::timestamptz IS NULL OR (m.created_at, m.id) > ($1::timestamptz, $2::uuid))
                  AND ($3::text IS NULL OR {OWNER} = $3)
                ORDER BY m.created_at, m.id LIMIT {PAGE}""",
            after[0] if after else None,
            after[1] if after else None,
            owner,
        )
        if not records:
            return
        memories = [to_memory(r) for r in records]
        events = await conn.fetch(
            f"""SELECT memory_id, event, at, actor, content, details FROM {schema}.memory_history
                WHERE memory_id = ANY($1::uuid[]) ORDER BY id""",
            [m.id for m in memories],
        )
        history: dict[UUID, list[ExportedEvent]] = {}
        for e in events:
            details = e["details"]
            history.setdefault(e["memory_id"], []).append(
                ExportedEvent(
                    event=e["event"],
                    at=e["at"],
                    actor=e["actor"],
                    content=e["content"],
                    details=json.loads(details) if isinstance(details, str) else details,
                )
            )
        yield [(m, history.get(m.id, [])) for m in memories]
        after = (memories[-1].created_at, memories[-1].id)


@dataclass(frozen=True)
class ImportedRow:
    """An exported memory with its columns derived again by the target tenant."""

    memory: Memory
    row: MemoryRow


async def insert_exported(conn: asyncpg.Connection, schema: str, rows: list[ImportedRow]) -> set[UUID]:
    """Insert each memory under its own id unless that id exists, or it is active and an active
    memory holds the same text. Returns the ids inserted. Supersession links are set later
    (``link``): the successor may come further down the file."""
    records = await conn.fetch(
        f"""INSERT INTO {schema}.memories AS m
              (id, content, kind, type, layer, source, external_id, importance, language, created_at, updated_at,
               occurred_at, last_accessed_at, access_count, mentions, reinforced_at, pinned, status, session_id,
               task_id, tags, metadata, dedup_key, identifiers, search_tokens, embedding, embedding_model,
               forgotten_at, derived_from, slot, user_id, agent_id)
            SELECT t.id, t.content, t.kind, t.type, t.layer, t.source, t.external_id, t.importance, t.language,
                   t.created_at, t.updated_at, t.occurred_at, t.last_accessed_at, t.access_count, t.mentions,
                   coalesce(t.reinforced_at, t.created_at), t.pinned, t.status, t.session_id, t.task_id,
                   ARRAY(SELECT jsonb_array_elements_text(t.tags::jsonb)), t.metadata::jsonb, t.dedup_key,
                   ARRAY(SELECT jsonb_array_elements_text(t.identifiers::jsonb)), t.search_tokens::tsvector,
                   t.embedding, $29, t.forgotten_at, t.derived_from::uuid[], t.slot, t.user_id, t.agent_id
            FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                        $8::real[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[],
                        $13::timestamptz[], $14::int[], $15::int[], $16::timestamptz[], $17::boolean[],
                        $18::text[], $19::text[], $20::text[], $21::text[], $22::text[], $23::text[], $24::text[],
                        $25::text[], $26::vector[], $27::timestamptz[], $28::text[], $30::text[], $31::text[],
                        $32::text[])
                 WITH ORDINALITY AS t(id, content, kind, type, layer, source, external_id, importance, language,
                                      created_at, updated_at, occurred_at, last_accessed_at, access_count,
                                      mentions, reinforced_at, pinned, status, session_id, task_id, tags,
                                      metadata, dedup_key, identifiers, search_tokens, embedding, forgotten_at,
                                      derived_from, slot, user_id, agent_id, position)
            ORDER BY t.position
            ON CONFLICT DO NOTHING
            RETURNING m.id""",
        [r.memory.id for r in rows],
        [r.row.content for r in rows],
        [r.memory.kind.value for r in rows],
        [r.memory.type.value for r in rows],
        [r.memory.layer.value for r in rows],
        [r.memory.source for r in rows],
        [r.memory.external_id for r in rows],
        [r.memory.importance for r in rows],
        [r.row.language for r in rows],
        [r.memory.created_at for r in rows],
        [r.memory.updated_at for r in rows],
        [r.memory.occurred_at for r in rows],
        [r.memory.last_accessed_at for r in rows],
        [r.memory.access_count for r in rows],
        [r.memory.mentions for r in rows],
        [r.memory.reinforced_at for r in rows],
        [r.memory.pinned for r in rows],
        [r.memory.status.value for r in rows],
        [r.memory.session_id for r in rows],
        [r.memory.task_id for r in rows],
        [json.dumps(r.memory.tags) for r in rows],
        [json.dumps(r.memory.metadata) for r in rows],
        [r.row.dedup_key for r in rows],
        [json.dumps(r.row.identifiers) for r in rows],
        [r.row.search_tokens for r in rows],
        [Vector(r.row.embedding) for r in rows],
        [r.memory.forgotten_at for r in rows],
        ["{" + ",".join(map(str, r.memory.derived_from)) + "}" for r in rows],
        rows[0].row.embedding_model,
        [r.row.slot for r in rows],
        [r.row.user_id for r in rows],
        [r.row.agent_id for r in rows],
    )
    return {r["id"] for r in records}


async def add_exported_history(conn: asyncpg.Connection, schema: str, events: list[tuple[UUID, ExportedEvent]]) -> None:
    """History entries as they happened (their times and actors kept), in file order."""
    if not events:
        return
    await conn.execute(
        f"""INSERT INTO {schema}.memory_history (memory_id, event, at, actor, content, details)
            SELECT t.memory_id, t.event, t.at, t.actor, t.content, t.details::jsonb
            FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[])
                 WITH ORDINALITY AS t(memory_id, event, at, actor, content, details, position)
            ORDER BY t.position""",
        [m for m, _ in events],
        [e.event for _, e in events],
        [e.at for _, e in events],
        [e.actor for _, e in events],
        [e.content for _, e in events],
        [json.dumps(e.details) for _, e in events],
    )


async def start_links(conn: asyncpg.Connection) -> None:
    """A session-local table of the supersession links still to set: the file may name a successor
    before it holds it, and a million links do not belong in the importer's memory."""
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS pg_temp.engram_pending_links (id uuid NOT NULL, successor uuid NOT NULL)"
    )
    await conn.execute("TRUNCATE pg_temp.engram_pending_links")


async def remember_links(conn: asyncpg.Connection, links: list[tuple[UUID, UUID]]) -> None:
    if links:
        await conn.execute(
            "INSERT INTO pg_temp.engram_pending_links SELECT * FROM unnest($1::uuid[], $2::uuid[])",
            [a for a, _ in links],
            [b for _, b in links],
        )


async def apply_links(conn: asyncpg.Connection, schema: str) -> int:
    """Set every pending link whose two memories exist and whose memory is superseded with no
    successor yet (a re-import changes nothing, and a memory the tenant holds as active stays as
    it is: "already present" changes nothing); returns how many were set."""
    status = await conn.execute(
        f"""UPDATE {schema}.memories m SET superseded_by = p.successor
            FROM pg_temp.engram_pending_links p
            WHERE m.id = p.id AND m.superseded_by IS NULL AND m.status = 'superseded'
              AND EXISTS (SELECT 1 FROM {schema}.memories s WHERE s.id = p.successor)"""
    )
    await conn.execute("DROP TABLE pg_temp.engram_pending_links")
    return int(status.split()[-1])


async def existing_external_ids(conn: asyncpg.Connection, schema: str, ids: list[str]) -> set[str]:
    records = await conn.fetch(
        f"SELECT DISTINCT external_id FROM {schema}.memories WHERE external_id = ANY($1::text[])", ids
    )
    return {r["external_id"] for r in records}


async def existing_ids(conn: asyncpg.Connection, schema: str, ids: list[UUID]) -> set[UUID]:
    records = await conn.fetch(f"SELECT id FROM {schema}.memories WHERE id = ANY($1::uuid[])", ids)
    return {r["id"] for r in records}
