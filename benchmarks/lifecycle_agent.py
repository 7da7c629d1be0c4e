"""The labelled write sequences written by an agent that settles what the rules cannot.

A scripted MCP client writes each statement of a case with `write_memory` through the real
service (streamable HTTP, the tenant's key), and names in `replaces` the earlier memories the
labels say it makes stale, by the ids earlier writes returned: an agent that follows the server's
instructions and knows which of the `candidates` a change replaces. It measures whether engram
does what such an agent asks (every stale memory retired, nothing else lost), not how often a real
model would ask it.

    python -m benchmarks.lifecycle_agent [--set changes|lifecycle|keep-both] [--split heldout]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from uuid import UUID

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.api.app import create_app
from engram.domain.tenancy import TenantContext
from engram.evaluation import lifecycle
from engram.runtime import Engram, database_url, engram_session
from engram.settings import Settings
from engram.store.embedded import _free_port

ROOT = Path(__file__).resolve().parents[1]


class McpWriter:
    """Writes a statement as an agent does: the write_memory tool, with the ids it replaces."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def write(self, statement: str, replaces: list[UUID]) -> tuple[str, UUID]:
        arguments: dict[str, object] = {"content": statement}
        if replaces:
            arguments["replaces"] = [str(r) for r in replaces]
        result = await self._client.call_tool("write_memory", arguments)
        if result.is_error:
            raise RuntimeError(f"write_memory failed: {result.content}")
        written = result.structured_content or {}
        return str(written["outcome"]), UUID(written["memory"]["id"])


def over_mcp(url: str) -> lifecycle.Connect:
    @contextlib.asynccontextmanager
    async def connect(ctx: TenantContext, key: str) -> AsyncIterator[lifecycle.Writer]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
        async with Client(streamable_http_client(f"{url}/t/{ctx.name}/mcp", http_client=http)) as client:
            yield McpWriter(client)

    return connect


@contextlib.contextmanager
def running_service(settings: Settings, dsn: str) -> Iterator[str]:
    """The real ASGI app under uvicorn on a free port, in a thread of its own."""
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings, dsn), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the engram service did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


async def measure(engram: Engram, url: str, cases: list[lifecycle.Case]) -> list[lifecycle.Outcome]:
    return await lifecycle.evaluate_cases(engram, cases, replaces=lifecycle.as_labelled, connect=over_mcp(url))


def run(name: str, split: str, own: Path) -> str:
    """On the database `engram eval` uses (ENGRAM_DATABASE_URL, or the embedded one under .state)."""
    settings = Settings()
    cases = lifecycle.select(lifecycle.load_set(own, name), split)
    with database_url(settings) as dsn, running_service(settings, dsn) as url:

        async def work() -> list[lifecycle.Outcome]:
            async with engram_session(settings, dsn) as engram:
                return await measure(engram, url, cases)

        outcomes = asyncio.run(work())
    return lifecycle.as_markdown(outcomes, f"{name}, {split} split, rules + an agent calling replaces over MCP")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="labelled", default="changes", choices=list(lifecycle.SETS))
    parser.add_argument("--split", default="heldout", choices=lifecycle.SPLITS)
    parser.add_argument("--own-data", type=Path, default=ROOT / "tests" / "data")
    args = parser.parse_args()
    print(run(args.labelled, args.split, args.own_data))


if __name__ == "__main__":
    main()
