"""REST: memories of one tenant. Routes are thin: they call the same services as the MCP tools."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Response, status
from pydantic import BaseModel, Field
from starlette.convertors import Convertor, register_url_convertor

from engram.api.deps import ActingDep, EngramDep, TenantDep, known_query
from engram.api.errors import ERROR_RESPONSES
from engram.domain.boundary import Instant, Text, UserId
from engram.domain.models import (
    MAX_BATCH_CEILING,
    SINGULAR,
    BatchWriteResult,
    HistoryEvent,
    Kind,
    Layer,
    Memory,
    MemoryCounts,
    MemoryFilter,
    MemoryPage,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Status,
    WriteOutcome,
    WriteResult,
)
from engram.domain.search import SearchRequest, SearchResult
from engram.domain.timeline import TimeBucket, Timeline


class MemoryIdConvertor(Convertor[str]):
    """A memory's id in a path: a UUID (any case, hyphens optional). Any other segment is no
    memory's path, so /memories/batch stays the batch route's (a PATCH there is a 405, not a bad id)."""

    regex = "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"

    def convert(self, value: str) -> str:
        return value  # parsed as a UUID, like any parameter, by the route

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("uuid_like", MemoryIdConvertor())
router = APIRouter(
    prefix="/t/{tenant}/v1", tags=["memories"], responses=ERROR_RESPONSES, dependencies=[Depends(known_query)]
)
ACTOR = "rest"


class BatchWrite(BaseModel):
    items: list[NewMemory] = Field(min_length=1, max_length=MAX_BATCH_CEILING)


class ForgetRequest(BaseModel):
    reason: Text | None = Field(None, max_length=500)


@router.post("/memories", status_code=status.HTTP_201_CREATED, responses={200: {"model": WriteResult}})
async def write_memory(item: NewMemory, ctx: TenantDep, engram: EngramDep, response: Response) -> WriteResult:
    """Store one memory: 201 when a memory was created (`created`, `superseded`), 200 with the
    memory that already held the fact (`duplicate`, `touched`, `merged`)."""
    result = await engram.writes.write(ctx, item, actor=ACTOR)
    if result.outcome in (WriteOutcome.duplicate, WriteOutcome.touched, WriteOutcome.merged):
        response.status_code = status.HTTP_200_OK
    return result


@router.post("/memories/batch")
async def write_memories(body: BatchWrite, ctx: TenantDep, engram: EngramDep) -> BatchWriteResult:
    """Store several memories in one transaction; results in the same order, with your external_id."""
    return BatchWriteResult(results=await engram.writes.write_batch(ctx, body.items, actor=ACTOR))


async def memory_filter(
    user_id: Annotated[
        UserId | None, Query(description="this end user's memories and the tenant's shared ones (default: all)")
    ] = None,
    own_only: Annotated[bool, Query(description="with user_id: that user's memories only")] = False,
    agent_id: Annotated[UserId | None, Query(description="only memories this agent wrote")] = None,
    type: Annotated[list[MemoryType] | None, Query()] = None,
    kind: Annotated[list[Kind] | None, Query(description="fact or turn (default: both)")] = None,
    layer: Annotated[list[Layer] | None, Query()] = None,
    status_: Annotated[list[Status] | None, Query(alias="status")] = None,
    tag: Annotated[list[Text] | None, Query()] = None,
    pinned: Annotated[bool | None, Query(description="true: only pinned memories; false: only unpinned")] = None,
    contains: Annotated[
        Text | None, Query(min_length=1, max_length=200, description="content holds this text (any case)")
    ] = None,
    session_id: Text | None = None,
    task_id: Text | None = None,
    current_only: Annotated[
        bool, Query(description="leave out memories a newer one may have replaced (those with `newer`)")
    ] = False,
    created_after: Instant | None = None,
    created_before: Instant | None = None,
    occurred_after: Instant | None = None,
    occurred_before: Instant | None = None,
) -> MemoryFilter:
    """The list filters from query parameters (MemoryFilter validates them, as in a search body)."""
    return MemoryFilter.named(locals(), {**SINGULAR, "status_": "statuses"})


FilterDep = Annotated[MemoryFilter, Depends(memory_filter)]


@router.get("/memories")
async def list_memories(
    ctx: TenantDep,
    engram: EngramDep,
    f: FilterDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
) -> MemoryPage:
    """Memories newest first, keyset-paged: pass ``next_cursor`` back as ``cursor``."""
    return await engram.memories.list(ctx, f, limit, cursor)


@router.get("/memories/timeline")
async def memory_timeline(
    ctx: TenantDep,
    engram: EngramDep,
    f: FilterDep,
    bucket: Annotated[TimeBucket, Query(description="auto: days, weeks or months, by the span covered")] = (
        TimeBucket.auto
    ),
) -> Timeline:
    """How many of the filtered memories happened in each day, week or month (UTC), by type."""
    return await engram.memories.timeline(ctx, f, bucket)


@router.get("/stats")
async def memory_counts(
    ctx: ActingDep,
    engram: EngramDep,
    own_only: Annotated[
        bool, Query(description="with user_id: that user's memories only; without: the shared ones only")
    ] = False,
) -> MemoryCounts:
    """How many memories: active ones by type and by layer, all of them by status."""
    return await engram.memories.counts(ctx, own_only)


@router.get("/memories/{memory_id:uuid_like}")
async def get_memory(memory_id: UUID, ctx: ActingDep, engram: EngramDep) -> Memory:
    return await engram.memories.get(ctx, memory_id)


@router.patch("/memories/{memory_id:uuid_like}")
async def update_memory(memory_id: UUID, patch: MemoryPatch, ctx: ActingDep, engram: EngramDep) -> Memory:
    """Change fields; new content is re-embedded. The previous content stays in the history."""
    return await engram.memories.update(ctx, memory_id, patch, actor=ACTOR)


@router.post("/memories/{memory_id:uuid_like}/forget")
async def forget_memory(
    memory_id: UUID, ctx: ActingDep, engram: EngramDep, body: ForgetRequest | None = None
) -> Memory:
    """Soft delete: hidden from search, restorable until purged."""
    return await engram.memories.forget(ctx, memory_id, actor=ACTOR, reason=body.reason if body else None)


@router.post("/memories/{memory_id:uuid_like}/restore")
async def restore_memory(memory_id: UUID, ctx: ActingDep, engram: EngramDep) -> Memory:
    return await engram.memories.restore(ctx, memory_id, actor=ACTOR)


@router.delete("/memories/{memory_id:uuid_like}", status_code=status.HTTP_204_NO_CONTENT)
async def purge_memory(memory_id: UUID, ctx: ActingDep, engram: EngramDep) -> Response:
    """Irreversible: delete a forgotten memory and erase its content from the history."""
    await engram.memories.purge(ctx, memory_id, actor=ACTOR)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/memories/{memory_id:uuid_like}/versions")
async def memory_versions(memory_id: UUID, ctx: ActingDep, engram: EngramDep) -> list[Memory]:
    """The chain of memories that superseded one another around this one, oldest first."""
    return await engram.memories.chain(ctx, memory_id)


@router.get("/memories/{memory_id:uuid_like}/history")
async def memory_history(memory_id: UUID, ctx: ActingDep, engram: EngramDep) -> list[HistoryEvent]:
    return await engram.memories.history(ctx, memory_id)


@router.post("/search")
async def search(request: SearchRequest, ctx: TenantDep, engram: EngramDep) -> SearchResult:
    """Hybrid search; ``explain: true`` adds every channel's raw candidates and the fused ranking."""
    return await engram.search.search(ctx, request)
