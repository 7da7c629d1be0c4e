"""Servers: the HTTP service, the one-command dev run, MCP over stdio."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import typer

from engram.cli.common import (
    DEFAULT_TENANT,
    TenantOpt,
    announce_service,
    app,
    command,
    fail,
    withdraw_service,
)
from engram.observability import logs
from engram.runtime import Engram, bootstrap_database, database_url, engram_session, exempt_startup_objects
from engram.settings import Settings

# -- servers -----------------------------------------------------------------------------------


@app.command()
@command
def mcp(tenant: TenantOpt = DEFAULT_TENANT) -> None:
    """Serve one tenant's MCP tools over stdio (for desktop agents), from any directory."""
    from engram.mcp.tools import build_mcp

    settings = Settings()

    async def run() -> None:
        with database_url(settings) as dsn:
            async with engram_session(settings, dsn) as engram:
                if settings.database_url is None and tenant == DEFAULT_TENANT:  # as `engram dev` makes it
                    await _ensure_default_tenant(engram, settings)
                context = await engram.tenants.resolve(tenant)
                await exempt_startup_objects()

                async def fixed_tenant():
                    return context

                await build_mcp(lambda: engram, fixed_tenant).run_stdio_async()

    asyncio.run(run())


@app.command()
@command
def serve() -> None:
    """Serve REST and MCP over HTTP on ENGRAM_HOST:ENGRAM_PORT."""
    settings = Settings()
    _refuse_a_taken_port(settings)
    with database_url(settings) as dsn:
        _serve(settings, dsn)


@app.command()
@command
def dev() -> None:
    """One-command local run: embedded PostgreSQL, migrations, a default tenant, the service on :8080."""
    settings = Settings()
    _refuse_a_taken_port(settings)
    with database_url(settings) as dsn:
        asyncio.run(bootstrap_database(dsn, settings.environment))
        key = _default_tenant_key(settings, dsn)
        base = settings.base_url()
        typer.secho("\nengram is starting", bold=True)
        typer.echo(f"  MCP URL (streamable HTTP): {base}/t/{DEFAULT_TENANT}/mcp")
        typer.echo(f"  MCP URL (SSE):             {base}/t/{DEFAULT_TENANT}/sse")
        typer.echo(f"  REST API:                  {base}/t/{DEFAULT_TENANT}/v1  (docs: {base}/docs)")
        typer.echo(f"  Memory browser:            {base}/t/{DEFAULT_TENANT}/ui  (log in with the API key)")
        typer.echo(f"  Metrics:                   {base}/metrics")
        typer.echo(f"  API key:                   {key}")
        typer.echo(f"  header:                    Authorization: Bearer {key}\n")
        _serve(settings, dsn)


def _refuse_a_taken_port(settings: Settings) -> None:
    """Before anything is started, printed or written: another process listening there (often
    another engram) keeps its port, its banner and its serving.json."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(settings.host, settings.port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as exc:
        raise fail(
            f"port {settings.port} on {settings.host} is in use ({exc.strerror or exc}): "
            f"set ENGRAM_PORT to a free one, e.g. ENGRAM_PORT={settings.port + 1} make run",
            2,
        ) from None


def _default_tenant_key(settings: Settings, dsn: str) -> str:
    async def ensure() -> str:
        async with engram_session(settings, dsn) as engram:
            return await _ensure_default_tenant(engram, settings)

    return asyncio.run(ensure())


async def _ensure_default_tenant(engram: Engram, settings: Settings) -> str:
    """The default tenant (created on first use) and its key, kept in the state directory (mode
    600) so every run can print it."""
    key_file = settings.state_dir / f"{DEFAULT_TENANT}-tenant.key"
    known = await asyncio.to_thread(_read_key, key_file)
    if DEFAULT_TENANT not in {t.name for t in await engram.tenants.list()}:
        key = (await engram.tenants.create(DEFAULT_TENANT))[1]
    elif known:
        return known
    else:
        key = await engram.tenants.rotate_key(DEFAULT_TENANT)
    await asyncio.to_thread(_keep_key, key_file, key)
    return key


def _read_key(key_file: Path) -> str | None:
    return key_file.read_text().strip() if key_file.exists() else None


def _keep_key(key_file: Path, key: str) -> None:
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.write_text(key)
    os.chmod(key_file, 0o600)


def _serve(settings: Settings, dsn: str) -> None:
    import uvicorn

    from engram.api.app import create_app
    from engram.api.server import server_config

    # uvicorn re-raises the signal that stopped it once it has shut down; turn SIGTERM into an
    # exit that unwinds the stack, so the embedded PostgreSQL started for this run is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    logs.configure(settings.log_level, settings.log_format)
    announce_service(settings)
    try:
        uvicorn.Server(server_config(create_app(settings, dsn), settings)).run()
    finally:
        withdraw_service(settings)
