"""Erasure from the command line: one user, the memories a filter or a query selects, a tenant.
Each prints its receipt (JSON) and exits 1 when it is incomplete (run it again)."""

from __future__ import annotations

from typing import Annotated, Any

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
    tenant_app,
    users_app,
    with_engram,
)
from engram.cli.memories import (
    FILTER_SPELLING,
    AgentOpt,
    ContainsOpt,
    CurrentOpt,
    KindOpt,
    LayerOpt,
    PinnedOpt,
    SessionOpt,
    TagOpt,
    TaskOpt,
    TimeOpt,
    TypeOpt,
)
from engram.cli.render import show
from engram.domain.boundary import valid_user_id
from engram.domain.erasure import ErasureReceipt
from engram.domain.models import MemoryFilter, Status
from engram.runtime import Engram
from engram.services.erasure import ErasureRequest
from engram.settings import Settings

StatusOpt = Annotated[list[Status] | None, typer.Option("--status", help="default: every status (repeatable)")]


def _hand_back(receipt: ErasureReceipt) -> None:
    show(receipt, True)
    if not receipt.complete and not receipt.dry_run:
        raise typer.Exit(1)


@users_app.command("erase")
@command
def users_erase(
    user_id: Annotated[str, typer.Argument(help="the end user's id")],
    tenant: TenantOpt = DEFAULT_TENANT,
    yes: YesOpt = False,
) -> None:
    """Erase everything of one user for good, now; prints the receipt (exit 1 if incomplete: run again)."""
    user = valid_user_id(user_id)
    confirm(yes, f"erase every memory of {user} in {tenant} for good?", "not erased")

    async def run(engram: Engram) -> Any:
        return await engram.erasure.user(await engram.tenants.resolve(tenant), user)

    _hand_back(with_engram(Settings(), run))


@app.command()
@command
def erase(
    tenant: TenantOpt = DEFAULT_TENANT,
    query: Annotated[str | None, typer.Option(help="erase the hits of this search (within the filter)")] = None,
    top_k: Annotated[int | None, typer.Option(min=1, help="with --query: how many hits")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="say what would be erased, erase nothing")] = False,
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
    yes: YesOpt = False,
) -> None:
    """Erase for good, now, the memories a filter selects (every status unless --status) or a
    query's hits, and what was derived from them. Try --dry-run first."""
    named = {k: v for k, v in locals().items() if k not in ("tenant", "query", "top_k", "dry_run", "yes")}
    f = MemoryFilter.named(named, FILTER_SPELLING)
    chosen = f if f.model_dump(exclude_defaults=True) else None  # no option given: no filter
    request = ErasureRequest(filter=chosen, query=query, top_k=top_k, dry_run=dry_run)
    if not dry_run:
        confirm(yes, f"erase the memories selected in {tenant} for good?", "not erased")

    async def run(engram: Engram) -> Any:
        return await engram.erasure.selection(await acting(engram, tenant, user_id), request)

    _hand_back(with_engram(Settings(), run))


@tenant_app.command("delete")
@command
def tenant_delete(name: str, yes: YesOpt = False) -> None:
    """Erase a tenant for good, now: its memories, history, keys and cached queries; prints the receipt."""
    confirm(yes, f"delete tenant {name} and every memory in it for good?", "not deleted")
    _hand_back(with_engram(Settings(), lambda e: e.erasure.tenant(name)))
