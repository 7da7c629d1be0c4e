"""The ``engram`` command line. Bad input exits with code 2 and a message on stderr."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar
from uuid import UUID

import typer

from engram.domain.models import Layer, MemoryType, NewMemory
from engram.domain.search import SearchRequest
from engram.errors import ConfigurationError, EngramError
from engram.runtime import Engram, bootstrap_database, database_url, embedded_postgres, engram_session
from engram.settings import Settings

app = typer.Typer(help="engram: long-term memory for LLM agents", no_args_is_help=True, add_completion=False)
tenant_app = typer.Typer(help="create, list and re-key tenants", no_args_is_help=True)
db_app = typer.Typer(help="the embedded PostgreSQL used when ENGRAM_DATABASE_URL is unset", no_args_is_help=True)
app.add_typer(tenant_app, name="tenant")
app.add_typer(db_app, name="db")

DEFAULT_TENANT = "default"
T = TypeVar("T")
TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="tenant name")]


def _fail(message: str, code: int) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code)


def command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Map expected errors to exit codes: 2 for bad input or state, 1 for deployment problems."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigurationError as exc:
            raise _fail(str(exc), 1) from None
        except EngramError as exc:
            raise _fail(str(exc), 2) from None

    return wrapper


def _with_engram(settings: Settings, work: Callable[[Engram], Awaitable[T]]) -> T:
    async def run() -> T:
        with database_url(settings) as dsn:
            async with engram_session(settings, dsn) as engram:
                return await work(engram)

    return asyncio.run(run())


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


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
def tenant_create(name: str) -> None:
    """Create a tenant and print its API key (shown once)."""
    settings = Settings()
    context, key = _with_engram(settings, lambda e: e.tenants.create(name))
    typer.echo(f"tenant:  {context.name}\nschema:  {context.schema}\napi key: {key}")
    typer.echo(f"mcp url: {settings.base_url()}/t/{context.name}/mcp")


@tenant_app.command("list")
@command
def tenant_list() -> None:
    """List tenants."""
    for info in _with_engram(Settings(), lambda e: e.tenants.list()):
        typer.echo(f"{info.name}\t{info.schema}\t{info.created_at:%Y-%m-%d %H:%M}")


@tenant_app.command("rotate-key")
@command
def tenant_rotate_key(name: str) -> None:
    """Revoke every key of a tenant and print a new one."""
    typer.echo(_with_engram(Settings(), lambda e: e.tenants.rotate_key(name)))


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
        raise _fail("the embedded PostgreSQL is not running: engram db start", 2)
    typer.echo(server.dsn())


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

    _print_json(_with_engram(Settings(), run).model_dump(mode="json"))


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

    _print_json(_with_engram(Settings(), run).model_dump(mode="json"))


@app.command()
@command
def forget(
    memory_id: str,
    tenant: TenantOpt,
    reason: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Forget one memory (soft: restorable until purged)."""
    try:
        parsed = UUID(memory_id)
    except ValueError:
        raise _fail(f"not a memory id: {memory_id!r}", 2) from None

    async def run(engram: Engram) -> Any:
        return await engram.memories.forget(await engram.tenants.resolve(tenant), parsed, actor="cli", reason=reason)

    _print_json(_with_engram(Settings(), run).model_dump(mode="json"))


# -- servers -----------------------------------------------------------------------------------


@app.command()
@command
def mcp(tenant: TenantOpt) -> None:
    """Serve one tenant's MCP tools over stdio (for desktop agents)."""
    from engram.mcp.tools import build_mcp

    settings = Settings()

    async def run() -> None:
        with database_url(settings) as dsn:
            async with engram_session(settings, dsn) as engram:
                context = await engram.tenants.resolve(tenant)

                async def fixed_tenant():
                    return context

                await build_mcp(lambda: engram, fixed_tenant).run_stdio_async()

    asyncio.run(run())


@app.command()
@command
def serve() -> None:
    """Serve REST and MCP over HTTP on ENGRAM_HOST:ENGRAM_PORT."""
    settings = Settings()
    with database_url(settings) as dsn:
        _serve(settings, dsn)


@app.command()
@command
def dev() -> None:
    """One-command local run: embedded PostgreSQL, migrations, a default tenant, the service on :8080."""
    settings = Settings()
    with database_url(settings) as dsn:
        asyncio.run(bootstrap_database(dsn, settings.environment))
        key = _default_tenant_key(settings, dsn)
        base = settings.base_url()
        typer.secho("\nengram is starting", bold=True)
        typer.echo(f"  MCP URL (streamable HTTP): {base}/t/{DEFAULT_TENANT}/mcp")
        typer.echo(f"  MCP URL (SSE):             {base}/t/{DEFAULT_TENANT}/sse")
        typer.echo(f"  REST API:                  {base}/t/{DEFAULT_TENANT}/v1  (docs: {base}/docs)")
        typer.echo(f"  API key:                   {key}")
        typer.echo(f"  header:                    Authorization: Bearer {key}\n")
        _serve(settings, dsn)


def _default_tenant_key(settings: Settings, dsn: str) -> str:
    """The default tenant's key, kept in the state directory (mode 600) so every run can print it."""
    key_file: Path = settings.state_dir / f"{DEFAULT_TENANT}-tenant.key"
    known = key_file.read_text().strip() if key_file.exists() else None

    async def ensure() -> str | None:
        async with engram_session(settings, dsn) as engram:
            if DEFAULT_TENANT not in {t.name for t in await engram.tenants.list()}:
                return (await engram.tenants.create(DEFAULT_TENANT))[1]
            return None if known else await engram.tenants.rotate_key(DEFAULT_TENANT)

    key = asyncio.run(ensure())
    if key is None:
        assert known is not None
        return known
    key_file.write_text(key)
    os.chmod(key_file, 0o600)
    return key


def _serve(settings: Settings, dsn: str) -> None:
    import uvicorn

    from engram.api.app import create_app

    # uvicorn re-raises the signal that stopped it once it has shut down; turn SIGTERM into an
    # exit that unwinds the stack, so the embedded PostgreSQL started for this run is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    uvicorn.run(create_app(settings, dsn), host=settings.host, port=settings.port, log_level="info")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
