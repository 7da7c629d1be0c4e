"""The second vector channel of a tenant from the command line: its state, the tenant's choice, and
making its vectors again."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from engram.cli.common import DEFAULT_TENANT, TenantOpt, app, command, with_engram
from engram.cli.render import show
from engram.domain.embedders import RetrievalChoice
from engram.runtime import Engram
from engram.settings import Settings


class Choice(StrEnum):
    on = "on"
    off = "off"
    default = "default"


@app.command()
@command
def retrieval(
    tenant: TenantOpt = DEFAULT_TENANT,
    set_to: Annotated[
        Choice | None,
        typer.Option("--set", help="on or off for this tenant, or default: the service's ENGRAM_RETRIEVAL_CHANNEL"),
    ] = None,
    catch_up: Annotated[
        bool, typer.Option("--catch-up", help="make the waiting second vectors now, then show the state")
    ] = False,
    again: Annotated[bool, typer.Option("--again", help="queue every second vector to be made again")] = False,
) -> None:
    """Show the tenant's second vector channel (the retrieval model's vectors): on or off, and how
    many memories still wait for their vector. A running service makes them in the background."""

    async def run(engram: Engram) -> Any:
        ctx = await engram.tenants.resolve(tenant)
        if set_to is not None:
            enabled = None if set_to is Choice.default else set_to is Choice.on
            await engram.retrieval.choose(ctx, RetrievalChoice(enabled=enabled))
            ctx = await engram.tenants.resolve(tenant)
        if again:
            await engram.retrieval.requeue(ctx)
        if catch_up:
            await engram.retrieval.work(ctx)
        return await engram.retrieval.status(ctx)

    show(with_engram(Settings(), run), True)
