"""A tenant's retention from the command line: shown, or changed entry by entry."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from engram.cli.common import DEFAULT_TENANT, TenantOpt, app, command, fail, with_engram
from engram.cli.render import show
from engram.domain.retention import Retention
from engram.runtime import Engram
from engram.settings import Settings


def _lifetimes(pairs: list[str], option: str) -> dict[str, float]:
    parsed = {}
    for pair in pairs:
        name, _, days = pair.partition("=")
        try:
            parsed[name.strip()] = float(days)
        except ValueError:
            raise fail(f"{option} takes NAME=DAYS (e.g. {option} session=7), not {pair!r}", 2) from None
    return parsed


@app.command()
@command
def retention(
    tenant: TenantOpt = DEFAULT_TENANT,
    layer: Annotated[
        list[str] | None, typer.Option("--layer", metavar="LAYER=DAYS", help="days a layer's memories live: session=7")
    ] = None,
    type: Annotated[
        list[str] | None, typer.Option("--type", metavar="TYPE=DAYS", help="days a type's memories live: event=365")
    ] = None,
    purge_after_days: Annotated[
        float | None, typer.Option(min=0, help="days a forgotten memory stays restorable")
    ] = None,
    reset: Annotated[bool, typer.Option("--reset", help="back to the service's defaults first")] = False,
) -> None:
    """Show the tenant's retention, or change it: each option replaces one entry, the others stay.
    The schedule forgets what outlived its layer's or its type's lifetime, and purges it later."""
    layers, types = _lifetimes(layer or [], "--layer"), _lifetimes(type or [], "--type")
    changes = layers or types or purge_after_days is not None or reset

    async def run(engram: Engram) -> Any:
        ctx = await engram.tenants.resolve(tenant)
        current = Retention() if reset else await engram.forgetting.retention(ctx)
        if not changes:
            return current
        wanted = current.model_dump(mode="json", exclude_none=True)
        wanted["layers"] = {**wanted["layers"], **layers}
        wanted["types"] = {**wanted["types"], **types}
        if purge_after_days is not None:
            wanted["purge_after_days"] = purge_after_days
        return await engram.forgetting.set_retention(ctx, Retention.model_validate(wanted))

    show(with_engram(Settings(), run), True)
