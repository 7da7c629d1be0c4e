"""Write, read, update, forget, restore and purge memories. One transaction per operation."""

from __future__ import annotations

import base64
from datetime import datetime
from uuid import UUID

import asyncpg

from engram.domain.identifiers import extract_identifiers
from engram.domain.models import (
    HistoryEvent,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPage,
    MemoryPatch,
    NewMemory,
    Status,
    WriteOutcome,
    WriteResult,
)
from engram.domain.text import duplicate_key, guess_language
from engram.domain.tokenize import document_tokens, to_tsvector_literal
from engram.embedding import Embedder
from engram.errors import Conflict, InvalidInput, NotFound
from engram.store import memories as repo
from engram.store.memories import MemoryRow
from engram.store.schema import TenantContext


class MemoryService:
    def __init__(self, pool: asyncpg.Pool, embedder: Embedder, max_batch: int, max_chars: int) -> None:
        self._pool = pool
        self._embedder = embedder
        self._max_batch = max_batch
        self._max_chars = max_chars

    # -- write -----------------------------------------------------------------------------

    async def write(self, ctx: TenantContext, item: NewMemory, actor: str | None = None) -> WriteResult:
        return (await self.write_batch(ctx, [item], actor))[0]

    async def write_batch(
        self, ctx: TenantContext, items: list[NewMemory], actor: str | None = None
    ) -> list[WriteResult]:
        """Store memories in one transaction, in order; an exact duplicate returns the existing memory."""
        if not items:
            raise InvalidInput("nothing to write: give at least one memory")
        if len(items) > self._max_batch:
            raise InvalidInput(f"a batch holds at most {self._max_batch} memories, got {len(items)}")
        contents = [self._clean_content(item.content) for item in items]
        for item in items:
            _check_scope(item.layer, item.session_id, item.task_id)
        # Embed before taking a connection: CPU work must not hold a database session.
        vectors = await self._embedder.embed_documents(contents)
        rows = [self._row(ctx, *args) for args in zip(items, contents, vectors, strict=True)]
        async with self._pool.acquire() as conn, conn.transaction():
            inserted = await repo.insert_many(conn, ctx.schema, rows)
            missing = [r.dedup_key for r in rows if r.dedup_key not in inserted]
            existing = await repo.get_active_by_dedup_keys(conn, ctx.schema, missing) if missing else {}
            results: list[WriteResult] = []
            history: list[tuple] = []
            for item, row in zip(items, rows, strict=True):
                memory = inserted.pop(row.dedup_key, None)
                if memory is not None:
                    outcome = WriteOutcome.created
                    history.append((memory.id, "written", actor, memory.content, _write_details(item)))
                    existing[row.dedup_key] = memory  # a later copy in this batch is its duplicate
                else:
                    outcome = WriteOutcome.duplicate
                    memory = existing.get(row.dedup_key)
                    if memory is None:  # the duplicate was forgotten between the two statements
                        raise Conflict("a concurrent change touched this memory; retry the write")
                results.append(WriteResult(outcome=outcome, memory=memory, external_id=item.external_id))
            await repo.add_history_many(conn, ctx.schema, history)
        return results

    def _row(self, ctx: TenantContext, item: NewMemory, content: str, vector) -> MemoryRow:
        scope = (
            item.session_id
            if item.layer == Layer.session
            else item.task_id
            if item.layer == Layer.task
            else None
        )
        return MemoryRow(
            content=content,
            type=item.type.value,
            layer=item.layer.value,
            source=item.source,
            external_id=item.external_id,
            importance=item.importance,
            language=guess_language(content),
            occurred_at=item.occurred_at,
            session_id=item.session_id,
            task_id=item.task_id,
            tags=_clean_tags(item.tags),
            metadata=item.metadata,
            dedup_key=duplicate_key(content, item.layer.value, scope),
            identifiers=extract_identifiers(content),
            search_tokens=to_tsvector_literal(document_tokens(content)),
            embedding=vector,
            embedding_model=ctx.embedding_model,
        )

    def _clean_content(self, content: str) -> str:
        content = content.strip()
        if not content:
            raise InvalidInput("content is empty")
        if len(content) > self._max_chars:
            raise InvalidInput(
                f"content has {len(content)} characters, the limit is {self._max_chars}: "
                "store one atomic fact per memory"
            )
        return content

    # -- read ------------------------------------------------------------------------------

    async def get(self, ctx: TenantContext, memory_id: UUID) -> Memory:
        async with self._pool.acquire() as conn:
            memory = await repo.get(conn, ctx.schema, memory_id)
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        return memory

    async def list(
        self, ctx: TenantContext, f: MemoryFilter, limit: int = 50, cursor: str | None = None
    ) -> MemoryPage:
        if not 1 <= limit <= 500:
            raise InvalidInput("limit must be between 1 and 500")
        after = _decode_cursor(cursor) if cursor else None
        async with self._pool.acquire() as conn:
            items = await repo.list_page(conn, ctx.schema, f, limit + 1, after)
        next_cursor = _encode_cursor(items[limit - 1]) if len(items) > limit else None
        return MemoryPage(items=items[:limit], next_cursor=next_cursor)

    async def history(self, ctx: TenantContext, memory_id: UUID) -> list[HistoryEvent]:
        async with self._pool.acquire() as conn:
            events = await repo.history(conn, ctx.schema, memory_id)
        if not events:
            raise NotFound(f"memory {memory_id} not found")
        return events

    # -- change ----------------------------------------------------------------------------

    async def update(
        self, ctx: TenantContext, memory_id: UUID, patch: MemoryPatch, actor: str | None = None
    ) -> Memory:
        """Change fields; new content is re-embedded and re-indexed, and may not duplicate another memory."""
        changes = patch.model_dump(exclude_unset=True)
        if not changes:
            raise InvalidInput("nothing to update: give at least one field")
        for field in ("content", "type", "tags", "metadata"):
            if field in changes and changes[field] is None:
                raise InvalidInput(f"{field} cannot be null")
        if "type" in changes:
            changes["type"] = changes["type"].value
        if "tags" in changes:
            changes["tags"] = _clean_tags(changes["tags"])
        vector = None
        if "content" in changes:
            changes["content"] = self._clean_content(changes["content"])
            vector = (await self._embedder.embed_documents([changes["content"]]))[0]
        async with self._pool.acquire() as conn, conn.transaction():
            current = await repo.get(conn, ctx.schema, memory_id, lock=True)
            if current is None:
                raise NotFound(f"memory {memory_id} not found")
            if vector is not None:
                content = changes["content"]
                scope = {Layer.session: current.session_id, Layer.task: current.task_id}.get(current.layer)
                changes |= {
                    "language": guess_language(content),
                    "dedup_key": duplicate_key(content, current.layer.value, scope),
                    "identifiers": extract_identifiers(content),
                    "search_tokens": to_tsvector_literal(document_tokens(content)),
                    "embedding": vector,
                    "embedding_model": ctx.embedding_model,
                }
            try:
                async with conn.transaction():
                    updated = await repo.update(conn, ctx.schema, memory_id, changes)
            except asyncpg.UniqueViolationError:
                raise Conflict("another active memory already has this content") from None
            details = {
                k: v for k, v in patch.model_dump(mode="json", exclude_unset=True).items() if k != "content"
            }
            if "content" in changes:
                details["previous_content"] = current.content
            await repo.add_history(conn, ctx.schema, memory_id, "updated", updated.content, actor, details)
        return updated

    async def forget(
        self, ctx: TenantContext, memory_id: UUID, actor: str | None = None, reason: str | None = None
    ) -> Memory:
        """Soft delete: hidden from search, restorable until purged."""
        return await self._set_status(ctx, memory_id, Status.forgotten, "forgotten", actor, reason)

    async def restore(self, ctx: TenantContext, memory_id: UUID, actor: str | None = None) -> Memory:
        return await self._set_status(ctx, memory_id, Status.active, "restored", actor, None)

    async def _set_status(
        self,
        ctx: TenantContext,
        memory_id: UUID,
        status: Status,
        event: str,
        actor: str | None,
        reason: str | None,
    ) -> Memory:
        async with self._pool.acquire() as conn, conn.transaction():
            current = await repo.get(conn, ctx.schema, memory_id, lock=True)
            if current is None:
                raise NotFound(f"memory {memory_id} not found")
            if status == Status.forgotten and current.status == Status.forgotten:
                return current
            if status == Status.active and current.status != Status.forgotten:
                raise Conflict(
                    f"memory {memory_id} is {current.status.value}; only forgotten memories are restored"
                )
            try:
                async with conn.transaction():
                    updated = await repo.update(conn, ctx.schema, memory_id, {"status": status.value})
            except asyncpg.UniqueViolationError:
                raise Conflict(
                    "an identical memory was written after this one was forgotten; restore would duplicate it"
                ) from None
            details = {"reason": reason} if reason else {}
            details["previous_status"] = current.status.value
            await repo.add_history(conn, ctx.schema, memory_id, event, current.content, actor, details)
        return updated

    async def purge(self, ctx: TenantContext, memory_id: UUID, actor: str | None = None) -> None:
        """Hard delete of a forgotten memory, content erased from its history too. Irreversible."""
        async with self._pool.acquire() as conn, conn.transaction():
            current = await repo.get(conn, ctx.schema, memory_id, lock=True)
            if current is None:
                raise NotFound(f"memory {memory_id} not found")
            if current.status != Status.forgotten:
                raise Conflict(f"memory {memory_id} is {current.status.value}: forget it before purging")
            await repo.delete(conn, ctx.schema, memory_id)
            await repo.erase_history_content(conn, ctx.schema, memory_id)
            await repo.add_history(conn, ctx.schema, memory_id, "purged", None, actor)


def _check_scope(layer: Layer, session_id: str | None, task_id: str | None) -> None:
    if layer == Layer.session and not session_id:
        raise InvalidInput("a session-layer memory needs a session_id")
    if layer == Layer.task and not task_id:
        raise InvalidInput("a task-layer memory needs a task_id")


def _clean_tags(tags: list[str]) -> list[str]:
    cleaned = [t.strip() for t in tags if t and t.strip()]
    if any(len(t) > 100 for t in cleaned):
        raise InvalidInput("a tag has at most 100 characters")
    return list(dict.fromkeys(cleaned))


def _write_details(item: NewMemory) -> dict:
    return {k: v for k, v in {"source": item.source, "external_id": item.external_id}.items() if v}


def _encode_cursor(memory: Memory) -> str:
    raw = f"{memory.created_at.isoformat()}|{memory.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        created, memory_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        return datetime.fromisoformat(created), UUID(memory_id)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("invalid cursor: pass back the next_cursor of a previous page") from None
