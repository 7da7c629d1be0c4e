"""The end users of a tenant from the command line."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from engram.cli.common import DEFAULT_TENANT, TenantOpt, command, users_app, with_engram
from engram.cli.memories import JsonOpt
from engram.cli.render import show
from engram.domain.boundary import valid_user_id
from engram.runtime import Engram
from engram.settings import Settings


@users_app.command("list")
@command
def users_list(
    tenant: TenantOpt = DEFAULT_TENANT,
    prefix: Annotated[str, typer.Option(help="ids starting with this")] = "",
    after: Annotated[str, typer.Option(help="the cursor printed under the previous page")] = "",
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
    as_json: JsonOpt = False,
) -> None:
    """The users owning memories, by id, with their counts."""

    async def run(engram: Engram) -> Any:
        return await engram.users.list(await engram.tenants.resolve(tenant), prefix, after, limit)

    show(with_engram(Settings(), run), as_json)


@users_app.command("key")
@command
def users_key(
    user_id: Annotated[str, typer.Argument(help="the end user's id")], tenant: TenantOpt = DEFAULT_TENANT
) -> None:
    """Print a new API key bound to this user (shown once): it reaches only that user's memories
    and the tenant's shared ones."""
    user = valid_user_id(user_id)

    async def run(engram: Engram) -> Any:
        return await engram.users.key(await engram.tenants.resolve(tenant), user)

    typer.echo(with_engram(Settings(), run).api_key)
