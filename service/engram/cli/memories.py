"""Memories from the command line: write, search, list, get, history, remember, forget, restore,
purge, consolidate, close. Tables for people by default, ``--json`` for scripts."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import typer

from engram.cli.common import (
    DEFAULT_TENANT,
    OwnOpt,
    TenantOpt,
    UserOpt,
    YesOpt,
    acting,
    app,
    command,
    confirm,
    fail,
    with_engram,
)
from engram.cli.render import show
from engram.domain.judgement import Turn
from engram.domain.models import SINGULAR, Kind, Layer, MemoryFilter, MemoryPatch, MemoryType, NewMemory, Status
from engram.domain.search import SearchRequest
from engram.domain.tenancy import TenantContext
from engram.domain.timeline import TimeBucket
from engram.runtime import Engram
from engram.settings import Settings

# -- memories ----------------------------------------------------------------------------------

JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON (as the REST API returns it) instead of a table")]
TypeOpt = Annotated[list[MemoryType] | None, typer.Option("--type", help="only this type (repeatable)")]
TagOpt = Annotated[
    list[str] | None, typer.Option("--tag", help="only memories with this tag (repeatable: all of them)")
]
SessionOpt = Annotated[str | None, typer.Option("--session", help="only this session's memories")]
TaskOpt = Annotated[str | None, typer.Option("--task", help="only this task's memories")]
StatusOpt = Annotated[list[Status] | None, typer.Option("--status", help="default: active (repeatable)")]
KindOpt = Annotated[list[Kind] | None, typer.Option("--kind", help="fact or turn (default: both)")]
LayerOpt = Annotated[list[Layer] | None, typer.Option("--layer", help="only this layer (repeatable)")]
PinnedOpt = Annotated[bool | None, typer.Option("--pinned/--unpinned", help="only pinned, or only unpinned, memories")]
ContainsOpt = Annotated[str | None, typer.Option(help="only memories whose content holds this text (any case)")]
CurrentOpt = Annotated[bool, typer.Option("--current-only", help="leave out memories a newer one may have replaced")]
TimeOpt = Annotated[datetime | None, typer.Option(help="ISO 8601")]
AgentOpt = Annotated[
    str | None, typer.Option("--agent-id", help="the agent that wrote it (a filter: only its memories)")
]
MemoryIdArg = Annotated[str, typer.Argument(help="the memory's id")]
ReplacesOpt = Annotated[
    list[str] | None,
    typer.Option("--replaces", help="id of an older memory this makes no longer true (repeatable): superseded by it"),
]


# The CLI's names of the filter options (as MemoryFilter.named reads them from a command's arguments).
FILTER_SPELLING = {**SINGULAR, "session": "session_id", "task": "task_id"}


@app.command()
@command
def write(
    content: str,
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    kind: Annotated[Kind, typer.Option(help="fact (deduplicated) or turn (a transcript line)")] = Kind.fact,
    type: Annotated[MemoryType, typer.Option()] = MemoryType.fact,
    layer: Annotated[Layer, typer.Option()] = Layer.long_term,
    importance: Annotated[float, typer.Option(min=0, max=1)] = 0.5,
    tag: Annotated[list[str] | None, typer.Option(help="repeatable")] = None,
    session_id: Annotated[str | None, typer.Option()] = None,
    task_id: Annotated[str | None, typer.Option()] = None,
    pinned: Annotated[bool, typer.Option(help="never forgotten by the schedule")] = False,
    source: Annotated[str, typer.Option(help="where it came from")] = "cli",
    external_id: Annotated[str | None, typer.Option(help="your own id, echoed back")] = None,
    occurred_at: Annotated[datetime | None, typer.Option(help="when it happened (ISO 8601)")] = None,
    created_at: Annotated[
        datetime | None, typer.Option(help="when it was first written, for one brought from another store")
    ] = None,
    metadata: Annotated[str | None, typer.Option(help="free-form JSON object")] = None,
    now: Annotated[datetime | None, typer.Option(help="when it was said, for 'tomorrow' (default: now)")] = None,
    replaces: ReplacesOpt = None,
    agent_id: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store one memory: what happened to it (created, duplicate, merged, superseded...), and the
    older memories it may update (pass one to --replaces to retire it)."""
    item = NewMemory(
        content=content,
        kind=kind,
        type=type,
        layer=layer,
        importance=importance,
        tags=tag or [],
        session_id=session_id,
        task_id=task_id,
        pinned=pinned,
        source=source,
        external_id=external_id,
        occurred_at=occurred_at,
        created_at=created_at,
        metadata=_json_object(metadata, "--metadata"),
        now=now,
        replaces=[_memory_id(r, "--replaces") for r in replaces or []],
        user_id=user_id,
        agent_id=agent_id,
    )

    async def run(engram: Engram) -> Any:
        return await engram.writes.write(await acting(engram, tenant, user_id), item, actor="cli")

    show(with_engram(Settings(), run), as_json)


@app.command()
@command
def search(
    query: str,
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k", min=1, help="default: the configured top_k")] = None,
    now: Annotated[
        datetime | None, typer.Option(help="the time 'last week' counts from (ISO 8601; default: now)")
    ] = None,
    type: TypeOpt = None,
    kind: KindOpt = None,
    layer: LayerOpt = None,
    status: StatusOpt = None,
    tag: TagOpt = None,
    pinned: PinnedOpt = None,
    contains: ContainsOpt = None,
    current_only: CurrentOpt = False,
    own_only: OwnOpt = False,
    agent_id: AgentOpt = None,
    session: SessionOpt = None,
    task: TaskOpt = None,
    created_after: TimeOpt = None,
    created_before: TimeOpt = None,
    occurred_after: TimeOpt = None,
    occurred_before: TimeOpt = None,
    explain: Annotated[bool, typer.Option(help="every channel's candidates (with --json)")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Search memories: the best hits with their scores."""
    request = SearchRequest(
        query=query,
        top_k=top_k,
        now=now,
        explain=explain,
        filter=MemoryFilter.named(locals(), FILTER_SPELLING),
    )

    async def run(engram: Engram) -> Any:
        return await engram.search.search(await acting(engram, tenant, user_id), request)

    show(with_engram(Settings(), run), as_json or explain)


@app.command("list")
@command
def list_(
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    type: TypeOpt = None,
    kind: KindOpt = None,
    layer: LayerOpt = None,
    status: StatusOpt = None,
    tag: TagOpt = None,
    pinned: PinnedOpt = None,
    contains: ContainsOpt = None,
    current_only: CurrentOpt = False,
    own_only: OwnOpt = False,
    agent_id: AgentOpt = None,
    session: SessionOpt = None,
    task: TaskOpt = None,
    created_after: TimeOpt = None,
    created_before: TimeOpt = None,
    occurred_after: TimeOpt = None,
    occurred_before: TimeOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    cursor: Annotated[str | None, typer.Option(help="the cursor printed under the previous page")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Memories newest first, a page at a time."""
    f = MemoryFilter.named(locals(), FILTER_SPELLING)

    async def run(engram: Engram) -> Any:
        return await engram.memories.list(await acting(engram, tenant, user_id), f, limit, cursor)

    show(with_engram(Settings(), run), as_json)


@app.command()
@command
def timeline(
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    bucket: Annotated[TimeBucket, typer.Option(help="auto: days, weeks, months or years, by the span")] = (
        TimeBucket.auto
    ),
    type: TypeOpt = None,
    kind: KindOpt = None,
    layer: LayerOpt = None,
    status: StatusOpt = None,
    tag: TagOpt = None,
    pinned: PinnedOpt = None,
    contains: ContainsOpt = None,
    current_only: CurrentOpt = False,
    own_only: OwnOpt = False,
    agent_id: AgentOpt = None,
    session: SessionOpt = None,
    task: TaskOpt = None,
    created_after: TimeOpt = None,
    created_before: TimeOpt = None,
    occurred_after: TimeOpt = None,
    occurred_before: TimeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """How many memories happened in each day, week, month or year (UTC), by type."""
    f = MemoryFilter.named(locals(), FILTER_SPELLING)

    async def run(engram: Engram) -> Any:
        return await engram.memories.timeline(await acting(engram, tenant, user_id), f, bucket)

    show(with_engram(Settings(), run), as_json)


@app.command()
@command
def get(
    memory_id: MemoryIdArg, tenant: TenantOpt = DEFAULT_TENANT, user_id: UserOpt = None, as_json: JsonOpt = False
) -> None:
    """One memory, whatever its status, with every field."""
    show(_on_memory(tenant, user_id, memory_id, lambda e, ctx, memory: e.memories.get(ctx, memory)), as_json)


@app.command()
@command
def history(
    memory_id: MemoryIdArg, tenant: TenantOpt = DEFAULT_TENANT, user_id: UserOpt = None, as_json: JsonOpt = False
) -> None:
    """Everything that happened to a memory: written, merged, superseded, forgotten, restored..."""
    show(_on_memory(tenant, user_id, memory_id, lambda e, ctx, memory: e.memories.history(ctx, memory)), as_json)


@app.command()
@command
def restore(
    memory_id: MemoryIdArg, tenant: TenantOpt = DEFAULT_TENANT, user_id: UserOpt = None, as_json: JsonOpt = False
) -> None:
    """Bring a forgotten memory back."""
    show(
        _on_memory(tenant, user_id, memory_id, lambda e, ctx, memory: e.memories.restore(ctx, memory, actor="cli")),
        as_json,
    )


@app.command()
@command
def purge(
    memory_id: MemoryIdArg,
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    yes: YesOpt = False,
) -> None:
    """Delete a forgotten memory for good; its content is erased from the history too."""
    parsed = _memory_id(memory_id)
    confirm(yes, f"purge {parsed} for good?", "not purged")

    async def run(engram: Engram) -> Any:
        return await engram.memories.purge(await acting(engram, tenant, user_id), parsed, actor="cli")

    with_engram(Settings(), run)
    typer.echo(f"purged {parsed}")


@app.command()
@command
def update(
    memory_id: MemoryIdArg,
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    content: Annotated[str | None, typer.Option(help="new content (embedded again)")] = None,
    type: Annotated[MemoryType | None, typer.Option()] = None,
    importance: Annotated[float | None, typer.Option(min=0, max=1)] = None,
    occurred_at: Annotated[str | None, typer.Option(help="when it happened (ISO 8601), or 'unknown'")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="the new tags, repeatable (replaces them all)")] = None,
    metadata: Annotated[str | None, typer.Option(help="the new metadata, a JSON object")] = None,
    pinned: Annotated[bool | None, typer.Option("--pinned/--unpinned", help="never forgotten by the schedule")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a memory's fields; its previous content stays in the history."""
    parsed = _memory_id(memory_id)
    given: dict[str, Any] = {
        "content": content,
        "type": type,
        "importance": importance,
        "tags": tag,
        "metadata": _json_object(metadata, "--metadata") if metadata is not None else None,
        "pinned": pinned,
    }
    changes = {k: v for k, v in given.items() if v is not None}
    if occurred_at is not None:
        changes["occurred_at"] = None if occurred_at == "unknown" else occurred_at
    patch = MemoryPatch.model_validate(changes)

    async def run(engram: Engram) -> Any:
        return await engram.memories.update(await acting(engram, tenant, user_id), parsed, patch, actor="cli")

    show(with_engram(Settings(), run), as_json)


@app.command()
@command
def forget(
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    memory_id: Annotated[
        str | None, typer.Argument(help="forget this memory; without it, run the forgetting job")
    ] = None,
    reason: Annotated[str | None, typer.Option()] = None,
    dry_run: Annotated[bool, typer.Option(help="job only: list what would go, change nothing")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Forget one memory, or run the scheduled forgetting job (for a Kubernetes CronJob)."""
    parsed = _memory_id(memory_id) if memory_id else None

    async def run(engram: Engram) -> Any:
        ctx = await acting(engram, tenant, user_id)
        if parsed is None:
            return await engram.forgetting.run(ctx, dry_run=dry_run)
        return await engram.memories.forget(ctx, parsed, actor="cli", reason=reason)

    show(with_engram(Settings(), run), as_json)


@app.command()
@command
def remember(
    user: Annotated[str, typer.Argument(help="what the user said")],
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    assistant: Annotated[str | None, typer.Option(help="the assistant's reply")] = None,
    session_id: Annotated[str | None, typer.Option()] = None,
    task_id: Annotated[str | None, typer.Option()] = None,
    occurred_at: Annotated[datetime | None, typer.Option(help="when the turn happened (ISO 8601)")] = None,
    now: Annotated[datetime | None, typer.Option(help="when it was said, for 'tomorrow' (default: now)")] = None,
    source: Annotated[str, typer.Option(help="where it came from")] = "cli",
    replaces: ReplacesOpt = None,
    agent_id: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Let the judge pick what to remember from one conversation turn, and store it."""
    turn = Turn(
        user=user,
        assistant=assistant,
        session_id=session_id,
        task_id=task_id,
        occurred_at=occurred_at,
        now=now,
        source=source,
        replaces=[_memory_id(r, "--replaces") for r in replaces or []],
        user_id=user_id,
        agent_id=agent_id,
    )

    async def run(engram: Engram) -> Any:
        return await engram.ingest.remember(await acting(engram, tenant, user_id), turn, actor="cli")

    show(with_engram(Settings(), run), as_json)


@app.command()
@command
def consolidate(
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    dry_run: Annotated[bool, typer.Option(help="list what would merge, change nothing")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Merge redundant memories and, with an LLM configured, derive higher-level ones."""

    async def run(engram: Engram) -> Any:
        return await engram.consolidation.run(await acting(engram, tenant, user_id), dry_run=dry_run)

    show(with_engram(Settings(), run), as_json)


@app.command()
@command
def close(
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    session_id: Annotated[str | None, typer.Option(help="the session that ended")] = None,
    task_id: Annotated[str | None, typer.Option(help="the task that ended")] = None,
) -> None:
    """End a session or task: its short-lived memories are forgotten (restorable)."""

    async def run(engram: Engram) -> Any:
        return await engram.memories.close(await acting(engram, tenant, user_id), session_id, task_id, actor="cli")

    closed = with_engram(Settings(), run)
    show({"closed": [str(m.id) for m in closed]}, True)


def _on_memory(
    tenant: str, user_id: str | None, memory_id: str, act: Callable[[Engram, TenantContext, UUID], Awaitable[Any]]
) -> Any:
    """Run one operation on one memory of a tenant (the id checked before anything starts)."""
    memory = _memory_id(memory_id)

    async def run(engram: Engram) -> Any:
        return await act(engram, await acting(engram, tenant, user_id), memory)

    return with_engram(Settings(), run)


def _json_object(value: str | None, option: str) -> dict[str, Any]:
    if value is None:
        return {}
    try:
        data = json.loads(value)
    except json.JSONDecodeError:
        raise fail(f"{option} is not JSON: {value!r}", 2) from None
    if not isinstance(data, dict):
        raise fail(f"{option} must be a JSON object", 2)
    return data


def _memory_id(value: str, option: str | None = None) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise fail(f"{option + ': ' if option else ''}not a memory id: {value!r}", 2) from None
