"""Export a tenant's memories as JSON Lines, and import them (or another store's export) into a
tenant. Both stream: a page or a batch at a time, whatever the size of the tenant or the file.

An engram export comes back as it was: the same ids, states, times, supersession links and
history, with vectors made again by the target tenant's model. Importing the same file twice adds
nothing (ids already present are skipped). Other stores' memories are new memories to engram: they
go through the ordinary write path (dedup, merge, supersede), and an id derived from the source
skips what an earlier import brought in.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
from pydantic import BaseModel, Field

from engram.domain import transfer as fmt
from engram.domain.models import NewMemory, Status
from engram.domain.tenancy import TenantContext
from engram.embedding import Embedders
from engram.errors import Conflict, InvalidInput
from engram.services.access import AccessLog
from engram.services.writes import WriteService, memory_row
from engram.store import erasure
from engram.store import memories as repo
from engram.store import transfer as store

BATCH = 200
# A mem0 export written as one JSON document (not one memory per line) is read whole, up to this.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


class ImportSummary(BaseModel):
    format: fmt.Format
    read: int = Field(description="memories (or observations and relations) read from the file")
    imported: int = Field(description="memories added to the tenant")
    already_present: int = Field(description="skipped: imported before (same id or source id)")
    erased: int = Field(0, description="skipped: erased from this tenant, and an erased memory stays erased")
    duplicates: int = Field(description="skipped or merged: the tenant already held the same fact")
    links: int = Field(0, description="supersession links set (engram exports)")
    outcomes: dict[str, int] = Field(default_factory=dict, description="write outcomes (other stores' exports)")


Progress = Callable[[int], None]


class TransferService:
    def __init__(
        self,
        pool: asyncpg.Pool,
        embedders: Embedders,
        writes: WriteService,
        access: AccessLog,
        max_batch: int,
        changed: Callable[[str], None] = lambda schema: None,
    ) -> None:
        """``changed``: told when an import added memories (their second vectors wait for them)."""
        self._changed = changed
        self._pool = pool
        self._access = access
        self._embedders = embedders
        self._writes = writes
        self._batch = min(BATCH, max_batch)

    async def export(self, ctx: TenantContext) -> AsyncIterator[str]:
        """The export, line by line: a header, every memory with its history (acting for a user:
        every memory of that user's own), a closing line."""
        await self._access.flush(ctx.schema)  # with every use counted so far
        async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            model, _ = await repo.current_state(conn, ctx.schema)
            header = fmt.Header(tenant=ctx.name, embedding_model=model, exported_at=datetime.now(UTC))
            yield fmt.header_line(header)
            count = 0
            async for page in store.snapshot(conn, ctx.schema, ctx.user):
                for memory, history in page:
                    yield fmt.memory_line(memory, history)
                count += len(page)
            yield fmt.end_line(count)

    async def import_lines(
        self,
        ctx: TenantContext,
        lines: AsyncIterator[str],
        format: fmt.Format | None = None,
        progress: Progress = lambda _: None,
    ) -> ImportSummary:
        records = _records(lines)
        first = await anext(records, None)
        if first is None:
            raise InvalidInput("the file is empty: nothing to import", field="file")
        number, data = first
        chosen = format or fmt.detect(data if isinstance(data, dict) else {"results": data})
        try:
            if chosen == fmt.Format.engram:
                return await self._import_engram(ctx, fmt.read_header(_object(data, number)), records, progress)
            return await self._import_foreign(ctx, chosen, _chain(first, records), progress)
        finally:  # what was committed before a bad line stays imported
            self._changed(ctx.schema)

    async def _import_engram(
        self,
        ctx: TenantContext,
        header: fmt.Header,
        records: AsyncIterator[tuple[int, Any]],
        progress: Progress,
    ) -> ImportSummary:
        summary = ImportSummary(format=fmt.Format.engram, read=0, imported=0, already_present=0, duplicates=0)
        ended: fmt.End | None = None
        async with self._pool.acquire() as conn:
            await store.start_links(conn)
            batch: list[tuple[int, fmt.ExportedMemory]] = []
            async for number, data in records:
                if ended is not None:
                    raise InvalidInput(f"line {number}: data after the closing line", field=f"line {number}")
                item = fmt.read_memory(_object(data, number), number)
                if isinstance(item, fmt.End):
                    ended = item
                    continue
                batch.append((number, item))
                if len(batch) >= self._batch:
                    await self._insert(conn, ctx, batch, summary)
                    progress(summary.read)
                    batch = []
            if batch:
                await self._insert(conn, ctx, batch, summary)
                progress(summary.read)
            async with conn.transaction():
                await repo.lock_writes(conn, ctx.schema)
                summary.links = await store.apply_links(conn, ctx.schema)
        if ended is None:
            raise InvalidInput(
                f"the export ends without its closing line: it was cut short after {summary.read} memories "
                f"({summary.imported} imported). Import the whole file again: what is present is skipped.",
                field="file",
            )
        if ended.memories != summary.read:
            raise InvalidInput(f"the export announces {ended.memories} memories but holds {summary.read}")
        return summary

    async def _insert(
        self,
        conn: asyncpg.Connection,
        ctx: TenantContext,
        batch: list[tuple[int, fmt.ExportedMemory]],
        summary: ImportSummary,
    ) -> None:
        """One batch in one transaction, under the tenant's write lock."""
        items, contents = [], []
        for number, exported in batch:
            m = exported.memory
            # The exported memory's own fields, read as the write path reads a new one; its columns
            # (language, tokens, slot, cleaned tags) are then derived as for any write.
            own = m.model_dump(include=set(NewMemory.model_fields) - {"now"})
            item = fmt.validated(NewMemory, own, number)
            items.append(item.model_copy(update={"user_id": ctx.user_for(item.user_id)}))
            try:
                contents.append(self._writes.clean_content(m.content))
            except InvalidInput as exc:
                raise InvalidInput(f"line {number}: {exc}", field=f"line {number}") from None
        vectors = await self._embedders.get(ctx.embedding_model).embed_documents(contents, ctx.name)
        rows = [
            store.ImportedRow(memory=exported.memory, row=memory_row(ctx, item, content, vector))
            for (_, exported), item, content, vector in zip(batch, items, contents, vectors, strict=True)
        ]
        async with conn.transaction():
            await repo.lock_writes(conn, ctx.schema)
            model, _ = await repo.current_state(conn, ctx.schema)
            if model != ctx.embedding_model:
                raise Conflict("the tenant's embedding model changed during the import (a reindex): import again")
            present = await store.existing_ids(conn, ctx.schema, [r.memory.id for r in rows])
            gone = await erasure.erased_ids(conn, ctx.schema, [r.memory.id for r in rows])
            rows = [r for r in rows if r.memory.id not in gone]
            inserted = await store.insert_exported(conn, ctx.schema, rows) if rows else set()
            history = [(item.memory.id, e) for _, item in batch if item.memory.id in inserted for e in item.history]
            await store.add_exported_history(conn, ctx.schema, history)
            await store.remember_links(
                conn,
                [
                    (item.memory.id, item.memory.superseded_by)
                    for _, item in batch
                    if item.memory.superseded_by is not None and item.memory.status == Status.superseded
                ],
            )
        summary.read += len(batch)
        summary.imported += len(inserted)
        summary.already_present += len(present)
        summary.erased += len(gone)
        summary.duplicates += len(batch) - len(inserted) - len(present) - len(gone)

    async def _import_foreign(
        self,
        ctx: TenantContext,
        format: fmt.Format,
        records: AsyncIterator[tuple[int, Any]],
        progress: Progress,
    ) -> ImportSummary:
        summary = ImportSummary(format=format, read=0, imported=0, already_present=0, duplicates=0)
        outcomes: Counter[str] = Counter()
        pending: list[NewMemory] = []

        async def flush() -> None:
            named = [i.external_id or "" for i in pending]
            async with self._pool.acquire() as conn:
                present = await store.existing_external_ids(conn, ctx.schema, named)
                gone = await erasure.erased_external_ids(conn, ctx.schema, named)
            fresh = list({i.external_id: i for i in pending if i.external_id not in present | gone}.values())
            summary.erased += sum(1 for i in pending if i.external_id in gone)
            summary.already_present += len(pending) - len(fresh) - sum(1 for i in pending if i.external_id in gone)
            if fresh:
                for result in await self._writes.write_batch(ctx, fresh, actor=f"import:{format.value}"):
                    outcomes[result.outcome.value] += 1
            pending.clear()
            progress(summary.read)

        async for number, data in records:
            if format == fmt.Format.mem0:
                items = fmt.mem0_items(data, number)
            else:
                items = fmt.mcp_memory_items(_object(data, number), number)
            summary.read += len(items)
            for item in items:  # a mem0 document may hold many records: batches stay bounded
                pending.append(item)
                if len(pending) == self._batch:
                    await flush()
        if pending:
            await flush()
        summary.outcomes = dict(outcomes)
        summary.imported = outcomes["created"] + outcomes["superseded"]
        summary.duplicates = sum(outcomes.values()) - summary.imported
        return summary


async def _records(lines: AsyncIterator[str]) -> AsyncIterator[tuple[int, Any]]:
    """(line number, JSON value) of each non-blank line. A file that is one JSON document spread
    over several lines (a mem0 ``get_all()`` saved with indentation) is read whole instead."""
    number = 0
    async for line in lines:
        number += 1
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError:
            if number > 1 or line.lstrip()[:1] not in "[{":
                raise InvalidInput(f"line {number}: not JSON", field=f"line {number}") from None
            yield 1, await _whole(line, lines)
            return


async def _whole(first: str, rest: AsyncIterator[str]) -> Any:
    parts, size = [first], len(first)
    async for line in rest:
        parts.append(line)
        size += len(line)
        if size > MAX_DOCUMENT_BYTES:
            raise InvalidInput("a JSON document this large must be written one memory per line", field="file")
    try:
        return json.loads("".join(parts))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not JSON: {exc.msg} at line {exc.lineno}", field="file") from None


async def _chain(first: tuple[int, Any], rest: AsyncIterator[tuple[int, Any]]) -> AsyncIterator[tuple[int, Any]]:
    yield first
    async for record in rest:
        yield record


def _object(data: Any, number: int) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InvalidInput(f"line {number}: expected a JSON object", field=f"line {number}")
    return data
