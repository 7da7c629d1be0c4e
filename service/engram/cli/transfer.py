"""`engram export` and `engram import`: a tenant's memories out as JSON Lines, and back in (or
another store's export)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import typer

from engram.cli.common import DEFAULT_TENANT, TenantOpt, UserOpt, acting, app, command, fail, with_engram
from engram.cli.progress import progress
from engram.cli.render import show
from engram.domain.transfer import Format
from engram.runtime import Engram
from engram.settings import Settings


@app.command("export")
@command
def export(
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write here instead of standard output")] = None,
) -> None:
    """Every memory of the tenant (active, superseded, forgotten) with its history, as JSON Lines;
    with --user-id, every memory of that user's own."""

    async def run(engram: Engram) -> int:
        ctx = await acting(engram, tenant, user_id)
        stream = out.open("w", encoding="utf-8") if out else sys.stdout
        count = -2  # the header and the closing line are not memories
        try:
            async for line in engram.transfer.export(ctx):
                stream.write(line)
                count += 1
        finally:
            if out:
                stream.close()
        return count

    count = with_engram(Settings(), run)
    typer.echo(f"exported {count} memories" + (f" to {out}" if out else ""), err=True)


@app.command("import")
@command
def import_(
    file: Annotated[Path, typer.Argument(help="the file to read, or - for standard input")],
    tenant: TenantOpt = DEFAULT_TENANT,
    user_id: UserOpt = None,
    format: Annotated[
        Format | None, typer.Option(help="engram, mem0 or mcp-memory (default: told from the file)")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the summary as JSON (the default when not at a terminal)")
    ] = False,
) -> None:
    """Bring memories in: an `engram export`, a mem0 export (`get_all()` results) or the MCP
    reference memory server's file. Importing the same file again adds nothing."""
    if str(file) != "-" and not file.is_file():
        raise fail(f"no file at {file}", 2)

    async def lines() -> AsyncIterator[str]:
        stream = sys.stdin if str(file) == "-" else file.open(encoding="utf-8")
        try:
            for line in stream:
                yield line
        finally:
            if stream is not sys.stdin:
                stream.close()

    with progress("importing") as update:

        async def run(engram: Engram) -> Any:
            ctx = await acting(engram, tenant, user_id)
            return await engram.transfer.import_lines(ctx, lines(), format, lambda read: update(read, None))

        summary = with_engram(Settings(), run)
    show(summary, as_json or not sys.stdout.isatty())  # a table for a person, JSON for a script
