"""The write pipeline: validate what was sent, write it as stored (dates resolved, "the user"),
embed, decide for each memory whether it is new, a repeat (touch), a detail (merge) or a change
(supersede what it surely replaces, and what the caller names in ``replaces``; mark what it may
replace), then apply the decisions under the tenant's write lock if what they rest on has not
changed meanwhile (no model or LLM call is made under the lock), and return with each result the
memories it may update (its candidates). Transcript turns are only ever exact duplicates or new."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from engram.domain.boundary import readable
from engram.domain.claims import read_claim
from engram.domain.decisions import Decision, Insert, Merge, Target, Touch, with_candidates
from engram.domain.dedup import Thresholds
from engram.domain.identifiers import extract_identifiers
from engram.domain.models import (
    Event,
    HistoryRow,
    Kind,
    Layer,
    Memory,
    NewMemory,
    Status,
    WriteOutcome,
    WriteResult,
)
from engram.domain.perspective import in_third_person
from engram.domain.storing import as_stored
from engram.domain.tenancy import TenantContext
from engram.domain.text import duplicate_key, guess_language
from engram.domain.tokenize import document_tokens, to_tsvector_literal
from engram.embedding import Embedders
from engram.errors import Conflict, InvalidInput, NotFound
from engram.judge import Judge
from engram.observability import metrics
from engram.services import dedup
from engram.services.slices import Slices
from engram.services.turns import KeyedLocks, WriteTurns
from engram.store import memories as repo
from engram.store.db import NearestPool, walking_the_index
from engram.store.memories import MemoryRow

# Times a write is decided again when other writers keep changing the memories it rests on.
MAX_PLANS = 5


def derived_columns(
    content: str, kind: Kind, layer: str, scope: str | None, vector: np.ndarray, model: str, owner: str | None
) -> dict[str, Any]:
    """Everything stored alongside a content, recomputed whenever the content changes."""
    return {
        "language": guess_language(content),
        "dedup_key": duplicate_key(content, layer, scope, kind.value, owner),
        "identifiers": extract_identifiers(content),
        "search_tokens": to_tsvector_literal(document_tokens(content)),
        "embedding": vector,
        "embedding_model": model,
        "slot": read_claim(content).filed_under if kind == Kind.fact else None,
    }


@dataclass(frozen=True)
class _Seen:
    """What a write's decisions rest on, as read at one moment."""

    model: str
    generation: int  # the tenant's, when read: unchanged under the lock means nothing changed
    exact: dict[str, Memory]
    neighbours: list[list[tuple[Memory, float]]]
    slot_mates: list[list[tuple[Memory, float]]]
    replaced: list[list[Memory]]  # per row, the active memories its caller says it replaces

    async def decide(self, rows: list[MemoryRow], thresholds: Thresholds, judge: Judge) -> list[Decision]:
        return await dedup.plan(rows, self.exact, self.neighbours, self.slot_mates, thresholds, judge, self.replaced)

    def fingerprint(self) -> tuple[str, frozenset[tuple[UUID, str, str]]]:
        """Equal while no memory the decisions looked at appeared, went or changed its text (a
        repeat that only counts a mention changes nothing here)."""
        memories = [*self.exact.values(), *(m for named in self.replaced for m in named)]
        for found in (*self.neighbours, *self.slot_mates):
            memories += [m for m, _ in found]
        return self.model, frozenset((m.id, m.status.value, m.content) for m in memories)


def scope_id(kind: Kind, layer: Layer, session_id: str | None, task_id: str | None) -> str | None:
    """What an exact duplicate must share besides its text: a turn its conversation, a fact of a
    short-lived layer its session or task."""
    if kind == Kind.turn:
        return session_id
    return {Layer.session: session_id, Layer.task: task_id}.get(layer)


def memory_row(
    ctx: TenantContext, item: NewMemory, content: str, vector: np.ndarray, derived_from: tuple[UUID, ...] = ()
) -> MemoryRow:
    """A memory ready to insert: the item's fields and everything the tenant derives from its content."""
    columns = derived_columns(
        content,
        item.kind,
        item.layer.value,
        scope_id(item.kind, item.layer, item.session_id, item.task_id),
        vector,
        ctx.embedding_model,
        item.user_id,
    )
    return MemoryRow(
        content=content,
        kind=item.kind.value,
        pinned=item.pinned,
        type=item.type.value,
        layer=item.layer.value,
        source=item.source,
        external_id=item.external_id,
        importance=item.importance,
        occurred_at=item.occurred_at,
        session_id=item.session_id,
        task_id=item.task_id,
        tags=clean_tags(item.tags),
        metadata=item.metadata,
        derived_from=derived_from,
        user_id=item.user_id,
        agent_id=item.agent_id,
        created_at=item.created_at,
        **columns,
    )


class WriteService:
    def __init__(
        self,
        pool: asyncpg.Pool,
        embedders: Embedders,
        judge: Judge,
        thresholds_for: Callable[[str], Thresholds],
        max_batch: int,
        max_chars: int,
        nearest: NearestPool,
        changed: Callable[[str], None] = lambda schema: None,
    ) -> None:
        """``changed``: told of each change of a tenant's memories (services/turns.py)."""
        self._pool = pool
        self._nearest = nearest
        self._embedders = embedders
        self._judge = judge
        self._thresholds_for = thresholds_for
        self._max_batch = max_batch
        self._max_chars = max_chars
        self._retries = KeyedLocks()
        self._turns = WriteTurns(pool, changed)

    def turn(self, schema: str) -> contextlib.AbstractAsyncContextManager[tuple[asyncpg.Connection, int]]:
        """The tenant's write lock, in this process's queue of its writers (services/turns.py):
        every change of a tenant's memories is made in one."""
        return self._turns.turn(schema)

    async def write(self, ctx: TenantContext, item: NewMemory, actor: str | None = None) -> WriteResult:
        return (await self.write_batch(ctx, [item], actor))[0]

    async def write_batch(
        self,
        ctx: TenantContext,
        items: list[NewMemory],
        actor: str | None = None,
        derived_from: list[UUID] | None = None,
    ) -> list[WriteResult]:
        """Store memories in one transaction, in order; results say what happened to each. Decided
        outside the tenant's write lock, then applied under it if nothing they rest on changed."""
        if not items:
            raise InvalidInput("nothing to write: give at least one memory")
        if len(items) > self._max_batch:
            raise InvalidInput(f"a batch holds at most {self._max_batch} memories, got {len(items)}")
        for index, item in enumerate(items):  # the limit holds for what the caller sent, not what it becomes
            where = index if len(items) > 1 else None
            self.clean_content(item.content, index=where)
            _check_scope(item.layer, item.session_id, item.task_id, index=where)
        # a key (or URL) pinned to a user writes that user's memories only
        items = [as_stored(item.model_copy(update={"user_id": ctx.user_for(item.user_id)})) for item in items]
        contents = [item.content.strip() for item in items]
        rows: list[MemoryRow] = []
        for attempt in range(MAX_PLANS):
            # A write that must decide again queues behind the tenant's other such writes in this
            # process, so related writers land one after the other instead of racing forever.
            async with self._retries.hold(ctx.schema) if attempt else contextlib.nullcontext():
                if not rows or rows[0].embedding_model != ctx.embedding_model:
                    rows = await self._rows(ctx, items, contents, tuple(derived_from or ()))
                async with self._pool.acquire() as conn:
                    seen = await self._read(conn, ctx, rows, items)
                if seen.model != ctx.embedding_model:  # `engram reindex` moved the tenant meanwhile
                    ctx = replace(ctx, embedding_model=seen.model, embedding_dim=self._embedders.get(seen.model).dim)
                    continue
                # Decided with no connection held: a judge may ask an LLM, a merge may embed.
                thresholds = self._thresholds_for(ctx.embedding_model)
                decisions = await seen.decide(rows, thresholds, self._judge)
                merges = await self._with_vectors(ctx, rows, self._merged_contents(rows, decisions))
                results = await self._commit(ctx, items, rows, seen, thresholds, decisions, merges, actor)
            if results is not None:
                for result in results:
                    metrics.write_decisions.labels(ctx.name, result.outcome.value).inc()
                return results
        raise Conflict("the memories around this write kept changing while it was decided; retry")

    async def _commit(
        self,
        ctx: TenantContext,
        items: list[NewMemory],
        rows: list[MemoryRow],
        seen: _Seen,
        thresholds: Thresholds,
        decisions: list[Decision],
        merges: dict[int, tuple[str, np.ndarray]],
        actor: str | None,
    ) -> list[WriteResult] | None:
        """Apply the decisions under the tenant's write lock, or None to decide again outside it."""
        async with self.turn(ctx.schema) as (conn, generation):
            moved = generation != seen.generation  # the tenant changed since
            if moved and (now := await self._read(conn, ctx, rows, items)).fingerprint() != seen.fingerprint():
                # and what the decisions rest on changed with it
                if self._judge.remote or now.model != seen.model:
                    return None
                # The rules decide in microseconds: again here, unless a merge needs a new vector.
                decisions = await now.decide(rows, thresholds, self._judge)
                contents = self._merged_contents(rows, decisions)
                if any(content != rows[i].content for i, content in contents.items()):
                    return None
                merges = await self._with_vectors(ctx, rows, contents)  # no embedding: rows' own vectors
            try:
                return await self._apply(conn, ctx, items, rows, decisions, merges, actor)
            except asyncpg.DataError:
                raise InvalidInput("a value of this write cannot be stored") from None

    async def _rows(
        self, ctx: TenantContext, items: list[NewMemory], contents: list[str], derived_from: tuple[UUID, ...]
    ) -> list[MemoryRow]:
        vectors = await self._embedders.get(ctx.embedding_model).embed_documents(contents, ctx.name)
        rows, slices = [], Slices()
        for item, content, vector in zip(items, contents, vectors, strict=True):
            await slices.tick()
            rows.append(memory_row(ctx, item, content, vector, derived_from))
        return rows

    async def _read(
        self, conn: asyncpg.Connection, ctx: TenantContext, rows: list[MemoryRow], items: list[NewMemory]
    ) -> _Seen:
        """What the decisions rest on: the tenant's model, exact copies, nearest facts, slot mates,
        the memories the callers say they replace.
        The nearest facts are read beside the rest, on a connection that walks the HNSW index; in a
        write turn (``conn`` in its transaction, holding the tenant's lock), all on ``conn``: a read
        on another connection could queue behind a schema change (a reindex's) that waits for this
        very transaction."""
        model, generation = await repo.current_state(conn, ctx.schema)
        if model != ctx.embedding_model:
            return _Seen(model, generation, {}, [], [], [])
        thresholds = self._thresholds_for(ctx.embedding_model)
        facts = [r for r in rows if r.kind == Kind.fact]
        floors = [dedup.floor(r.content, thresholds, self._judge) for r in facts]

        Near = list[list[tuple[Memory, float]]]
        owners = sorted({r.owner for r in facts})
        compare_all = owners != [""] and await repo.within_reach(conn, ctx.schema, owners)

        async def nearest(source: contextlib.AbstractAsyncContextManager[asyncpg.Connection]) -> Near:
            if not facts:
                return []
            async with source as near:
                return await repo.nearest_active(near, ctx.schema, facts, dedup.NEAREST, floors, compare_all)

        async def the_rest() -> tuple[dict[str, Memory], Near, list[list[Memory]]]:
            exact = await repo.get_active_by_dedup_keys(conn, ctx.schema, [r.dedup_key for r in rows])
            in_slots = await repo.active_in_slots(conn, ctx.schema, facts, dedup.SLOT_MATES) if facts else []
            return exact, in_slots, await self._replaced(conn, ctx, items)

        if conn.is_in_transaction() or not self._nearest.has_own_connections:
            # All on ``conn``: in a turn (see above; its other statements go by id), or when the
            # nearest query would borrow a second connection of a main pool this one may be the
            # last of (a budget under three).
            found = await nearest(walking_the_index(conn))
            exact, in_slots, replaced = await the_rest()
        else:
            reading = asyncio.create_task(nearest(self._nearest.acquire()))
            try:  # ``conn`` goes back to the pool only once nothing runs on it
                exact, in_slots, replaced = await the_rest()
            except BaseException:
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
                raise
            found = await reading
        near, mates = iter(found), iter(in_slots)
        neighbours = [next(near) if r.kind == Kind.fact else [] for r in rows]
        slot_mates = [next(mates) if r.kind == Kind.fact else [] for r in rows]
        for index, (row, named) in enumerate(zip(rows, replaced, strict=True)):
            same = exact.get(row.dedup_key)
            if same is not None and same in named:  # the very memory this fact is already held by
                field = _field(index, len(rows), "replaces")
                raise Conflict(f"{field}: {same.id} already holds this very fact, it cannot replace it", field=field)
        return _Seen(model, generation, exact, neighbours, slot_mates, replaced)

    async def _replaced(
        self, conn: asyncpg.Connection, ctx: TenantContext, items: list[NewMemory]
    ) -> list[list[Memory]]:
        """Per item, the active memories it says it replaces. An id that names no memory of the
        item's user (or of the tenant's own, for an item without a user) is refused (404), and so
        is a transcript turn (409: kept as said, never replaced), each with its field; one already
        retired or forgotten is left as it is."""
        wanted = list(dict.fromkeys(memory_id for item in items for memory_id in item.replaces))
        found = {m.id: m for m in await repo.get_many(conn, ctx.schema, wanted)} if wanted else {}
        for index, item in enumerate(items):
            for position, memory_id in enumerate(item.replaces):
                field = _field(index, len(items), f"replaces[{position}]")
                if memory_id not in found or found[memory_id].user_id != item.user_id:
                    whose = f"of user {item.user_id!r}" if item.user_id else "of the tenant's own"
                    raise NotFound(f"{field}: no memory {memory_id} {whose}", field=field, index=index)
                if found[memory_id].kind == Kind.turn:
                    raise Conflict(f"{field}: {memory_id} is a transcript turn, never replaced", field=field)
        return [[found[i] for i in dict.fromkeys(item.replaces) if found[i].status == Status.active] for item in items]

    def _merged_contents(self, rows: list[MemoryRow], decisions: list[Decision]) -> dict[int, str]:
        """The content each merging row leaves in its target."""
        return {
            i: in_third_person(d.content.strip()) or rows[i].content
            for i, d in enumerate(decisions)
            if isinstance(d, Merge)
        }

    async def _with_vectors(
        self, ctx: TenantContext, rows: list[MemoryRow], contents: dict[int, str]
    ) -> dict[int, tuple[str, np.ndarray]]:
        """Each merged content with its vector (the row's own when the content is the row's)."""
        return {
            i: (content, rows[i].embedding if content == rows[i].content else await self.embed(ctx, content))
            for i, content in contents.items()
        }

    async def _apply(
        self,
        conn: asyncpg.Connection,
        ctx: TenantContext,
        items: list[NewMemory],
        rows: list[MemoryRow],
        decisions: list[Decision],
        merges: dict[int, tuple[str, np.ndarray]],
        actor: str | None,
    ) -> list[WriteResult]:
        inserting = [i for i, d in enumerate(decisions) if isinstance(d, Insert)]
        inserted = await repo.insert_many(conn, ctx.schema, [rows[i] for i in inserting]) if inserting else {}
        if len(inserted) != len(inserting):  # only possible if the unique index saw a writer we did not
            raise Conflict("a concurrent write stored the same memory; retry")
        created = {i: inserted[rows[i].dedup_key] for i in inserting}
        history = [
            HistoryRow(m.id, Event.written, m.content, actor, _write_details(items[i])) for i, m in created.items()
        ]

        def memory_of(target: Target) -> Memory:
            return target.memory if target.memory is not None else created[target.batch_index or 0]

        results: list[WriteResult] = []
        marked: list[set[UUID]] = []
        for i, (item, row, decision) in enumerate(zip(items, rows, decisions, strict=True)):
            details: dict[str, Any] = {"similarity": round(decision.similarity, 4), "content": row.content}
            if decision.verdict is not None:
                details["reason"] = decision.verdict.reason
            match decision:
                case Insert():
                    holder, outcome = created[i], WriteOutcome.created
                case Merge(target=target):
                    current = await repo.get(conn, ctx.schema, memory_of(target).id)
                    if current is None:
                        raise Conflict("a memory this write merges into is gone; retry")
                    holder = await self._merge(conn, ctx, current, *merges[i])
                    history.append(
                        HistoryRow(
                            holder.id,
                            Event.merged,
                            holder.content,
                            actor,
                            {**details, "previous_content": current.content},
                        )
                    )
                    outcome = WriteOutcome.merged
                case Touch(target=target, exact=True) if item.replaces:
                    # the same fact sent again to settle what it replaces: not the user saying it again
                    current = await repo.get(conn, ctx.schema, memory_of(target).id)
                    if current is None:
                        raise Conflict("a memory this write settles is gone; retry")
                    holder, outcome = current, WriteOutcome.duplicate
                case Touch(target=target, exact=exact):
                    holder = await repo.touch(conn, ctx.schema, memory_of(target).id)
                    history.append(HistoryRow(holder.id, Event.touched, holder.content, actor, details))
                    outcome = WriteOutcome.duplicate if exact else WriteOutcome.touched
            if holder.newer is not None:  # stated again: current again
                holder = await repo.update(conn, ctx.schema, holder.id, {"newer_id": None})
                history.append(HistoryRow(holder.id, Event.unmarked, holder.content, actor, {"reason": "stated again"}))
            retired = []
            for retirement in decision.retire:
                old = await repo.get(conn, ctx.schema, memory_of(retirement.target).id)
                if old is None or old.status != Status.active or old.id == holder.id:
                    continue
                old = await repo.update(
                    conn, ctx.schema, old.id, {"status": "superseded", "superseded_by": holder.id, "newer_id": None}
                )
                why = {"reason": retirement.reason, "superseded_by": str(holder.id), "by_caller": retirement.by_caller}
                history.append(HistoryRow(old.id, Event.superseded, old.content, actor, {**details, **why}))
                history += _marks_moved(await repo.move_marks(conn, ctx.schema, old.id, holder.id), holder, actor)
                retired.append(old)
            marked.append(set())
            # No mark makes a cycle: each points at this holder, whose own mark was just lifted (it
            # is new, or said again), and an exact repeat marks nothing.
            for mark in decision.marks:
                old = await repo.get(conn, ctx.schema, memory_of(mark.target).id)
                if old is None or old.status != Status.active or old.id == holder.id:
                    continue
                if old.newer != holder.id:
                    await repo.update(conn, ctx.schema, old.id, {"newer_id": holder.id})
                    why = {"newer": str(holder.id), "reason": mark.reason, "content": row.content}
                    history.append(HistoryRow(old.id, Event.marked, old.content, actor, why))
                marked[i].add(old.id)
            if retired and outcome == WriteOutcome.created:
                outcome = WriteOutcome.superseded
            results.append(
                WriteResult(
                    outcome=outcome,
                    memory=holder,
                    external_id=item.external_id,
                    related=retired[0] if retired else None,
                    superseded=retired,
                )
            )
        await repo.add_history(conn, ctx.schema, *history)
        looked_at = {memory_of(x.target).id for d in decisions for x in d.looked if not x.someone_else}
        now = {m.id: m for m in await repo.get_many(conn, ctx.schema, sorted(looked_at))} if looked_at else {}
        return with_candidates(results, decisions, marked, memory_of, now)

    async def _merge(
        self, conn: asyncpg.Connection, ctx: TenantContext, target: Memory, content: str, vector: np.ndarray
    ) -> Memory:
        """Put the merged content into the existing memory; a repeat of the fact counts as an access."""
        scope = scope_id(target.kind, target.layer, target.session_id, target.task_id)
        changes = {
            "content": content,
            **derived_columns(
                content, target.kind, target.layer.value, scope, vector, ctx.embedding_model, target.user_id
            ),
        }
        try:
            async with conn.transaction():
                await repo.update(conn, ctx.schema, target.id, changes)
        except asyncpg.UniqueViolationError:
            pass  # the merged text already exists as another memory: count the repeat only
        return await repo.touch(conn, ctx.schema, target.id)

    def clean_content(self, content: str, index: int | None = None) -> str:
        field = "content" if index is None else f"items[{index}].content"
        content = content.strip()
        if not content:
            raise InvalidInput(f"{field} is empty", field=field, index=index)
        if not readable(content):
            raise InvalidInput(
                f"{field} holds only invisible characters (spaces, control or zero-width)", field=field, index=index
            )
        if len(content) > self._max_chars:
            raise InvalidInput(
                f"{field} has {len(content)} characters, the limit is {self._max_chars}: "
                "store one atomic fact per memory",
                field=field,
                index=index,
            )
        return content

    async def embed(self, ctx: TenantContext, content: str) -> np.ndarray:
        return (await self._embedders.get(ctx.embedding_model).embed_documents([content], ctx.name))[0]


def _field(index: int, items: int, name: str) -> str:
    """A field of an item, as the caller names it: "replaces[0]", or in a batch "items[2].replaces[0]"."""
    return f"items[{index}].{name}" if items > 1 else name


def _marks_moved(moved: list[Memory], holder: Memory, actor: str | None) -> list[HistoryRow]:
    reason = {"newer": str(holder.id), "reason": "the memory that may have replaced it was itself replaced"}
    return [HistoryRow(m.id, Event.marked, m.content, actor, reason) for m in moved]


def _check_scope(layer: Layer, session_id: str | None, task_id: str | None, index: int | None = None) -> None:
    prefix = "" if index is None else f"items[{index}]."
    if layer == Layer.session and not session_id:
        raise InvalidInput("a session-layer memory needs a session_id", field=f"{prefix}session_id", index=index)
    if layer == Layer.task and not task_id:
        raise InvalidInput("a task-layer memory needs a task_id", field=f"{prefix}task_id", index=index)


def clean_tags(tags: list[str]) -> list[str]:
    cleaned = [t.strip() for t in tags if t and t.strip()]
    if any(len(t) > 100 for t in cleaned):
        raise InvalidInput("a tag has at most 100 characters")
    return list(dict.fromkeys(cleaned))


def _write_details(item: NewMemory) -> dict:
    return {k: v for k, v in {"source": item.source, "external_id": item.external_id}.items() if v}
