"""Database, tenants and calibration."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from engram.cli.common import (
    DEFAULT_TENANT,
    TenantOpt,
    app,
    command,
    db_app,
    fail,
    print_json,
    service_url,
    tenant_app,
    with_engram,
)
from engram.cli.progress import progress
from engram.cli.render import show
from engram.domain.provisioning import MAX_OVERLAP_SECONDS, TenantList, TenantSummary
from engram.embedding import build_embedder
from engram.runtime import Engram, bootstrap_database, database_url, embedded_postgres, engram_session
from engram.services import calibration
from engram.settings import Environment, Settings
from engram.store import dumps
from engram.store.embedded import client_program

DEFAULT_PAIRS = Path("tests/data/dedup_pairs.jsonl")

# -- database and tenants ----------------------------------------------------------------------


@app.command()
@command
def migrate() -> None:
    """Create or upgrade the control schema and every tenant schema; label an unlabelled database."""
    settings = Settings()

    async def run() -> None:
        with database_url(settings) as dsn:
            applied = await bootstrap_database(dsn, settings.environment)
            async with engram_session(settings, dsn, check=False) as engram:
                applied |= await engram.tenants.migrate_all()
        for schema, versions in applied.items():
            typer.echo(f"{schema}: {'applied ' + ', '.join(map(str, versions)) if versions else 'up to date'}")

    asyncio.run(run())


@tenant_app.command("create")
@command
def tenant_create(
    name: str,
    environment: Annotated[
        Environment | None, typer.Option(help="refuse unless the database serves this environment")
    ] = None,
) -> None:
    """Create a tenant and print its API key (shown once)."""
    settings = Settings()
    context, key = with_engram(settings, lambda e: e.tenants.create(name, environment))
    base = service_url(settings)
    typer.echo(f"tenant:   {context.name}\nschema:   {context.schema}\napi key:  {key}")
    typer.echo(f"mcp url:  {base}/t/{context.name}/mcp\nrest url: {base}/t/{context.name}/v1")


@tenant_app.command("list")
@command
def tenant_list(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (as the admin API returns it)")] = False,
) -> None:
    """List tenants: name, schema, when created, and the MemoryTenant that manages it, if any."""
    found = with_engram(Settings(), lambda e: e.tenants.list())
    listed = TenantList(
        tenants=[
            TenantSummary(name=t.name, schema_name=t.schema, created_at=t.created_at, managed_by=t.managed_by)
            for t in found
        ]
    )
    show(listed, as_json)


@tenant_app.command("rotate-key")
@command
def tenant_rotate_key(
    name: str,
    overlap_seconds: Annotated[
        float, typer.Option(min=0, max=MAX_OVERLAP_SECONDS, help="how long the old keys keep working")
    ] = 0,
) -> None:
    """Print a new key of a tenant; its keys before it stop working (after the overlap)."""
    typer.echo(with_engram(Settings(), lambda e: e.tenants.rotate_key(name, overlap_seconds)))


@tenant_app.command("restore")
@command
def tenant_restore(
    name: str,
    dump: Annotated[Path, typer.Argument(help="a backup: `pg_dump --format=custom -n <schema>` of a tenant")],
    pg_restore: Annotated[
        str | None, typer.Option(help="the pg_restore to read it with (default: the bundled one, else $PATH's)")
    ] = None,
) -> None:
    """Load a backup's memories and their history into a new, empty tenant (not its keys)."""
    if not dump.is_file():
        raise fail(f"no dump at {dump}", 2)
    reader = pg_restore or client_program("pg_restore")
    if reader is None:
        raise fail("no pg_restore found: install PostgreSQL's client programs or pass --pg-restore", 2)
    counts = with_engram(Settings(), lambda e: e.tenants.restore(name, dumps.restore_output(str(dump), reader)))
    typer.echo(", ".join(f"{table}: {rows} rows" for table, rows in counts.items()))


@db_app.command("start")
@command
def db_start() -> None:
    """Start the embedded PostgreSQL (initialised on first use) and print its URL."""
    typer.echo(embedded_postgres(Settings()).start())


@db_app.command("stop")
@command
def db_stop() -> None:
    embedded_postgres(Settings()).stop()


@db_app.command("url")
@command
def db_url() -> None:
    """Print the URL of the running embedded PostgreSQL."""
    server = embedded_postgres(Settings())
    if not server.is_running():
        raise fail("the embedded PostgreSQL is not running: engram db start", 2)
    typer.echo(server.dsn())


@app.command()
@command
def calibrate(
    pairs: Annotated[Path, typer.Option(help="labelled pairs, JSON lines")] = DEFAULT_PAIRS,
    write: Annotated[bool, typer.Option(help="store the thresholds as this model's defaults")] = False,
) -> None:
    """Choose near-duplicate thresholds for the configured embedding model and report the merge decision's
    precision and recall on a labelled pair set."""
    if not pairs.exists():
        raise fail(f"no pair file at {pairs}", 2)
    settings = Settings()

    async def run() -> None:
        embedder = build_embedder(settings)
        try:
            labelled = calibration.load_pairs(pairs)
            with progress("embedding the pairs") as update:
                sims = await calibration.similarities(embedder, labelled, update)
            with progress("trying thresholds") as update:
                thresholds = await calibration.choose(labelled, sims, update)
            typer.echo(f"model: {embedder.model_id}")
            for line in (await calibration.evaluate(labelled, sims, thresholds)).lines():
                typer.echo(line)
            if write:
                typer.echo(f"written to {calibration.save_thresholds(embedder.model_id, thresholds)}")
        finally:
            embedder.close()

    asyncio.run(run())


@app.command()
@command
def reindex(
    model: Annotated[str, typer.Option(help="the embedding model to move to")],
    tenant: TenantOpt = DEFAULT_TENANT,
) -> None:
    """Re-embed every memory of a tenant with another model, online; search keeps working.

    Running services follow the move: each tenant keeps its own model (ENGRAM_EMBEDDING_MODEL is
    the model of new tenants)."""

    with progress(f"re-embedding with {model}") as update:

        async def run(engram: Engram) -> Any:
            return await engram.reindex.run(await engram.tenants.resolve(tenant), model, update)

        report = with_engram(Settings(), run)
    print_json(report.model_dump(mode="json"))
