"""Memories from the command line: write, search, remember, forget, consolidate."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

import typer

from engram.cli.common import (
    TenantOpt,
    app,
    command,
    fail,
    print_json,
    with_engram,
)
from engram.domain.judgement import Turn
from engram.domain.models import Layer, MemoryType, NewMemory
from engram.domain.search import SearchRequest
from engram.runtime import Engram
from engram.settings import Settings

# -- memories ----------------------------------------------------------------------------------


@app.command()
@command
def write(
    content: str,
    tenant: TenantOpt,
    type: Annotated[MemoryType, typer.Option()] = MemoryType.fact,
    layer: Annotated[Layer, typer.Option()] = Layer.long_term,
    importance: Annotated[float, typer.Option(min=0, max=1)] = 0.5,
    tag: Annotated[list[str] | None, typer.Option(help="repeatable")] = None,
    session_id: Annotated[str | None, typer.Option()] = None,
    task_id: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Store one memory and print it as JSON."""
    item = NewMemory(
        content=content,
        type=type,
        layer=layer,
        importance=importance,
        tags=tag or [],
        session_id=session_id,
        task_id=task_id,
        source="cli",
    )

    async def run(engram: Engram) -> Any:
        return await engram.writes.write(await engram.tenants.resolve(tenant), item, actor="cli")

    print_json(with_engram(Settings(), run).model_dump(mode="json"))


@app.command()
@command
def search(
    query: str,
    tenant: TenantOpt,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1)] = 5,
    explain: Annotated[bool, typer.Option(help="print every channel's candidates")] = False,
) -> None:
    """Search memories and print the hits as JSON."""
    request = SearchRequest(query=query, top_k=top_k, explain=explain)

    async def run(engram: Engram) -> Any:
        return await engram.search.search(await engram.tenants.resolve(tenant), request)

    print_json(with_engram(Settings(), run).model_dump(mode="json"))


@app.command()
@command
def forget(
    tenant: TenantOpt,
    memory_id: Annotated[
        str | None, typer.Argument(help="forget this memory; without it, run the forgetting job")
    ] = None,
    reason: Annotated[str | None, typer.Option()] = None,
    dry_run: Annotated[bool, typer.Option(help="job only: list what would go, change nothing")] = False,
) -> None:
    """Forget one memory, or run the scheduled forgetting job (for a Kubernetes CronJob)."""
    parsed = _memory_id(memory_id) if memory_id else None

    async def run(engram: Engram) -> Any:
        ctx = await engram.tenants.resolve(tenant)
        if parsed is None:
            return await engram.forgetting.run(ctx, dry_run=dry_run)
        return await engram.memories.forget(ctx, parsed, actor="cli", reason=reason)

    print_json(with_engram(Settings(), run).model_dump(mode="json"))


@app.command()
@command
def remember(
    user: Annotated[str, typer.Argument(help="what the user said")],
    tenant: TenantOpt,
    assistant: Annotated[str | None, typer.Option(help="the assistant's reply")] = None,
    session_id: Annotated[str | None, typer.Option()] = None,
    task_id: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Let the judge pick what to remember from one conversation turn, and store it."""
    turn = Turn(user=user, assistant=assistant, session_id=session_id, task_id=task_id, source="cli")

    async def run(engram: Engram) -> Any:
        return await engram.ingest.remember(await engram.tenants.resolve(tenant), turn, actor="cli")

    print_json(with_engram(Settings(), run).model_dump(mode="json"))


@app.command()
@command
def consolidate(
    tenant: TenantOpt,
    dry_run: Annotated[bool, typer.Option(help="list what would merge, change nothing")] = False,
) -> None:
    """Merge redundant memories and, with an LLM configured, derive higher-level ones."""

    async def run(engram: Engram) -> Any:
        return await engram.consolidation.run(await engram.tenants.resolve(tenant), dry_run=dry_run)

    print_json(with_engram(Settings(), run).model_dump(mode="json"))


@app.command()
@command
def close(
    tenant: TenantOpt,
    session_id: Annotated[str | None, typer.Option(help="the session that ended")] = None,
    task_id: Annotated[str | None, typer.Option(help="the task that ended")] = None,
) -> None:
    """End a session or task: its short-lived memories are forgotten (restorable)."""

    async def run(engram: Engram) -> Any:
        return await engram.memories.close(await engram.tenants.resolve(tenant), session_id, task_id, actor="cli")

    closed = with_engram(Settings(), run)
    print_json({"closed": [str(m.id) for m in closed]})


def _memory_id(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise fail(f"not a memory id: {value!r}", 2) from None
