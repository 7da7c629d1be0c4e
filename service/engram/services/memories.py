"""Read, update, forget, restore and purge memories. One transaction per operation."""

from __future__ import annotations

import base64
import builtins  # `list` is also a method here
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

import asyncpg

from engram.domain.boundary import bounded_instant
from engram.domain.models import (
    Event,
    HistoryEvent,
    HistoryRow,
    Layer,
    Memory,
    MemoryCounts,
    MemoryFilter,
    MemoryPage,
    MemoryPatch,
    MemoryType,
    Status,
)
from engram.domain.tenancy import TenantContext
from engram.domain.timeline import TimeBucket, Timeline, timeline
from engram.errors import Conflict, Forbidden, InvalidInput, NotFound
from engram.services.access import AccessLog
from engram.services.writes import WriteService, clean_tags, derived_columns, scope_id
from engram.store import memories as repo


class MemoryService:
    """Reading and changing stored memories; writing new ones is services/writes.py."""

    def __init__(self, pool: asyncpg.Pool, writes: WriteService, access: AccessLog) -> None:
        self._pool = pool
        self._writes = writes
        self._access = access

    # -- read ------------------------------------------------------------------------------

    async def settle_uses(self, ctx: TenantContext) -> None:
        """Write the uses of the tenant's memories counted so far (see services/access.py)."""
        await self._access.flush(ctx.schema)

    async def get(self, ctx: TenantContext, memory_id: UUID) -> Memory:
        await self.settle_uses(ctx)  # what is read includes every use counted so far
        async with self._pool.acquire() as conn:
            return await _reach(conn, ctx, memory_id)

    async def list(self, ctx: TenantContext, f: MemoryFilter, limit: int = 50, cursor: str | None = None) -> MemoryPage:
        if not 1 <= limit <= 500:
            raise InvalidInput("limit must be between 1 and 500")
        f = ctx.scoped(f)
        after = _decode_cursor(cursor) if cursor else None
        await self.settle_uses(ctx)
        async with self._pool.acquire() as conn:
            items = await repo.list_page(conn, ctx.schema, f, limit + 1, after)
        next_cursor = _encode_cursor(items[limit - 1]) if len(items) > limit else None
        return MemoryPage(items=items[:limit], next_cursor=next_cursor)

    async def counts(self, ctx: TenantContext, own_only: bool = False) -> MemoryCounts:
        """How many memories the context reaches (its user's and the shared ones; ``own_only``:
        the user's alone, or without a user the shared ones alone), of every status."""
        async with self._pool.acquire() as conn:
            rows = await repo.counts(conn, ctx.schema, MemoryFilter(user_id=ctx.user, own_only=own_only))
        by_type: dict[str, int] = {t.value: 0 for t in MemoryType}
        by_layer: dict[str, int] = {x.value: 0 for x in Layer}
        by_status: dict[str, int] = {x.value: 0 for x in Status}
        for r in rows:
            by_status[r["status"]] += r["n"]
            if r["status"] == Status.active:
                by_type[r["type"]] += r["n"]
                by_layer[r["layer"]] += r["n"]
        return MemoryCounts(by_type=by_type, by_layer=by_layer, by_status=by_status)

    async def timeline(self, ctx: TenantContext, f: MemoryFilter, bucket: TimeBucket = TimeBucket.auto) -> Timeline:
        async with self._pool.acquire() as conn:
            return timeline(await repo.daily_counts(conn, ctx.schema, ctx.scoped(f)), bucket)

    async def chain(self, ctx: TenantContext, memory_id: UUID) -> builtins.list[Memory]:
        """The versions of a fact: what this memory replaced and what replaced it, oldest first."""
        await self.settle_uses(ctx)
        async with self._pool.acquire() as conn:
            chain = [m for m in await repo.supersession_chain(conn, ctx.schema, memory_id) if ctx.may_read(m)]
        if not any(m.id == memory_id for m in chain):
            raise NotFound(f"memory {memory_id} not found")
        return chain

    async def history(self, ctx: TenantContext, memory_id: UUID) -> builtins.list[HistoryEvent]:
        """A memory's events, oldest first; acting for a user, only of a memory that user reaches
        (a purged memory's record is the tenant's)."""
        async with self._pool.acquire() as conn:
            if ctx.user is not None:
                await _reach(conn, ctx, memory_id)
            events = await repo.history(conn, ctx.schema, memory_id)
        if not events:
            raise NotFound(f"memory {memory_id} not found")
        return events

    # -- change ----------------------------------------------------------------------------

    async def update(
        self,
        ctx: TenantContext,
        memory_id: UUID,
        patch: MemoryPatch,
        actor: str | None = None,
    ) -> Memory:
        """Change fields; new content is re-embedded and re-indexed, and may not duplicate another memory."""
        changes = patch.model_dump(exclude_unset=True)
        if not changes:
            raise InvalidInput("nothing to update: give at least one field")
        await self.settle_uses(ctx)
        for field in ("content", "type", "importance", "tags", "metadata", "pinned"):
            if field in changes and changes[field] is None:
                raise InvalidInput(f"{field} cannot be null", field=field)
        if "type" in changes:
            changes["type"] = changes["type"].value
        if "tags" in changes:
            changes["tags"] = clean_tags(changes["tags"])
        vector = None
        if "content" in changes:
            changes["content"] = self._writes.clean_content(changes["content"])
            vector = await self._writes.embed(ctx, changes["content"])
        async with self._writes.turn(ctx.schema) as (conn, _):
            current = await _reach(conn, ctx, memory_id, change=True)
            if vector is not None:
                scope = scope_id(current.kind, current.layer, current.session_id, current.task_id)
                changes |= derived_columns(
                    changes["content"],
                    current.kind,
                    current.layer.value,
                    scope,
                    vector,
                    ctx.embedding_model,
                    current.user_id,
                )
            try:
                async with conn.transaction():
                    updated = await repo.update(conn, ctx.schema, memory_id, changes)
            except asyncpg.UniqueViolationError:
                raise Conflict("another active memory already has this content") from None
            details = {k: v for k, v in patch.model_dump(mode="json", exclude_unset=True).items() if k != "content"}
            if "content" in changes:
                details["previous_content"] = current.content
            if set(details) == {"pinned"}:  # a pin alone is its own event
                event = Event.pinned if changes["pinned"] else Event.unpinned
                await repo.add_history(conn, ctx.schema, HistoryRow(memory_id, event, updated.content, actor))
            else:
                row = HistoryRow(memory_id, Event.updated, updated.content, actor, details)
                await repo.add_history(conn, ctx.schema, row)
        return updated

    async def close(
        self,
        ctx: TenantContext,
        session_id: str | None,
        task_id: str | None,
        actor: str | None = None,
    ) -> builtins.list[Memory]:
        """Close whichever of a session or a task is given (exactly one)."""
        if session_id is not None and task_id is None:
            return await self.close_scope(ctx, Layer.session, session_id, actor)
        if task_id is not None and session_id is None:
            return await self.close_scope(ctx, Layer.task, task_id, actor)
        raise InvalidInput("give exactly one of session_id and task_id", field="session_id")

    async def close_scope(
        self, ctx: TenantContext, layer: Layer, scope: str, actor: str | None = None
    ) -> builtins.list[Memory]:
        """A session or task ended: its short-lived memories are forgotten (restorable); acting for
        a user, that user's own."""
        if layer == Layer.long_term:
            raise InvalidInput("only session and task layers are closed")
        f = MemoryFilter(
            layers=[layer],
            session_id=scope if layer == Layer.session else None,
            task_id=scope if layer == Layer.task else None,
            user_id=ctx.user,
            own_only=ctx.user is not None,
        )
        closed = []
        while page := (await self.list(ctx, f, limit=500)).items:
            for memory in page:
                why = f"{layer.value} {scope} closed"
                closed.append(await self.forget(ctx, memory.id, actor, reason=why))
        return closed

    async def forget(
        self,
        ctx: TenantContext,
        memory_id: UUID,
        actor: str | None = None,
        reason: str | None = None,
    ) -> Memory:
        """Soft delete: hidden from search, restorable until purged."""
        forgotten = await self._set_status(ctx, memory_id, Status.forgotten, Event.forgotten, actor, reason)
        assert forgotten is not None  # no precondition
        return forgotten

    async def forget_if_unused(
        self, ctx: TenantContext, memory_id: UUID, since: datetime, actor: str, reason: str
    ) -> Memory | None:
        """The schedule's forget: only a memory still active, unpinned and neither changed, used nor
        restated since ``since`` (when the schedule judged it): a run never undoes what happened meanwhile."""

        def unused(current: Memory) -> bool:
            moments = (current.updated_at, current.last_accessed_at, current.reinforced_at)
            return current.status == Status.active and not current.pinned and all(t <= since for t in moments if t)

        return await self._set_status(ctx, memory_id, Status.forgotten, Event.forgotten, actor, reason, unused)

    async def restore(self, ctx: TenantContext, memory_id: UUID, actor: str | None = None) -> Memory:
        restored = await self._set_status(ctx, memory_id, Status.active, Event.restored, actor, None)
        assert restored is not None  # no precondition
        return restored

    async def _set_status(
        self,
        ctx: TenantContext,
        memory_id: UUID,
        status: Status,
        event: Event,
        actor: str | None,
        reason: str | None,
        precondition: Callable[[Memory], bool] | None = None,
    ) -> Memory | None:
        """Change a memory's status under its row lock; None if ``precondition`` no longer holds."""
        await self.settle_uses(ctx)  # a use counted a moment ago keeps it from the schedule
        async with self._writes.turn(ctx.schema) as (conn, _):
            current = await _reach(conn, ctx, memory_id, change=True)
            if precondition is not None and not precondition(current):
                return None
            if status == Status.forgotten and current.status == Status.forgotten:
                return current
            if status == Status.active and current.status != Status.forgotten:
                raise Conflict(f"memory {memory_id} is {current.status.value}; only forgotten memories are restored")
            changes: dict[str, object] = {"status": status.value, "forgotten_at": None}
            if status == Status.forgotten:
                changes["forgotten_at"] = datetime.now(UTC)
            else:  # restored: its forgetting clock starts over, or the next run would forget it again
                changes["reinforced_at"] = datetime.now(UTC)
            try:
                async with conn.transaction():
                    updated = await repo.update(conn, ctx.schema, memory_id, changes)
            except asyncpg.UniqueViolationError:
                raise Conflict(
                    "an identical memory was written after this one was forgotten; restore would duplicate it"
                ) from None
            details = {"reason": reason} if reason else {}
            details["previous_status"] = current.status.value
            rows = [HistoryRow(memory_id, event, current.content, actor, details)]
            if status == Status.forgotten:  # what it may have replaced is current again
                lifted = {"reason": f"the newer memory {memory_id} was forgotten"}
                for older in await repo.unmark_newer_than(conn, ctx.schema, memory_id):
                    rows.append(HistoryRow(older.id, Event.unmarked, older.content, actor, lifted))
            await repo.add_history(conn, ctx.schema, *rows)
        return updated

    async def purge(
        self,
        ctx: TenantContext,
        memory_id: UUID,
        actor: str | None = None,
        forgotten_before: datetime | None = None,
    ) -> bool:
        """Hard delete of a forgotten memory, content erased from its history too. Irreversible.
        With ``forgotten_before`` (the schedule), a memory restored or forgotten again since is left
        alone: False."""
        async with self._writes.turn(ctx.schema) as (conn, _):
            current = await _reach(conn, ctx, memory_id, change=True)
            if forgotten_before is not None and not (
                current.status == Status.forgotten and current.forgotten_at and current.forgotten_at < forgotten_before
            ):
                return False
            if current.status != Status.forgotten:
                raise Conflict(f"memory {memory_id} is {current.status.value}: forget it before purging")
            await repo.delete(conn, ctx.schema, memory_id)
            await repo.erase_history_content(conn, ctx.schema, memory_id)
            await repo.add_history(conn, ctx.schema, HistoryRow(memory_id, Event.purged, None, actor))
        return True


async def _reach(conn: asyncpg.Connection, ctx: TenantContext, memory_id: UUID, *, change: bool = False) -> Memory:
    """The memory, if the context (acting for its user, if any) reaches it: another user's is not
    found (404, as a missing one: ids tell nothing across users); the tenant's shared memory is
    read by a user but changed only by the tenant (403). Locked for a change."""
    memory = await repo.get(conn, ctx.schema, memory_id, lock=change)
    if memory is None or not ctx.may_read(memory):
        raise NotFound(f"memory {memory_id} not found")
    if change and not ctx.may_change(memory):
        raise Forbidden(
            f"memory {memory_id} is the tenant's, shared by every user: change it with the tenant's key, "
            "acting for no user",
            field="user_id",
        )
    return memory


def _encode_cursor(memory: Memory) -> str:
    raw = f"{memory.created_at.isoformat()}|{memory.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        created, memory_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        # a made-up cursor may hold a year no arithmetic survives, or no time zone
        return bounded_instant(datetime.fromisoformat(created)), UUID(memory_id)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("invalid cursor: pass back the next_cursor of a previous page", field="cursor") from None
