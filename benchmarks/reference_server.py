"""The baseline: the MCP reference memory server (npm @modelcontextprotocol/server-memory, a JSONL
knowledge graph searched by substring), holding the same realistic facts, asked the same questions."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from benchmarks import realistic
from benchmarks.stats import percentiles

PACKAGE = "@modelcontextprotocol/server-memory"


async def _measure(count: int, texts: list[str]) -> list[tuple[str, str]]:
    folder = Path(tempfile.mkdtemp(prefix="engram-bench-reference-"))
    params = StdioServerParameters(
        command="npx",
        args=["-y", "--quiet", PACKAGE],
        env={
            "MEMORY_FILE_PATH": str(folder / "memory.jsonl"),
            "HOME": str(folder),
            "PATH": os.environ["PATH"],
            "NPM_CONFIG_UPDATE_NOTIFIER": "false",
        },
    )
    rng = random.Random(11)
    mixes = [mix for mix in realistic.MIXES if mix.kind == "fact"]
    facts = [text for mix in mixes for text in mix.texts(count // len(mixes) + 1, rng)][:count]
    async with Client(params) as client:
        started = time.perf_counter()
        for i in range(0, count, 500):
            entities = [
                {"name": f"fact-{i + j}", "entityType": "memory", "observations": [f]}
                for j, f in enumerate(facts[i : i + 500])
            ]
            result = await client.call_tool("create_entities", {"entities": entities})
            assert not result.is_error, result
        rate = count / (time.perf_counter() - started)
        samples = []
        for text in texts:
            started = time.perf_counter()
            result = await client.call_tool("search_nodes", {"query": text})
            samples.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result
    shutil.rmtree(folder, ignore_errors=True)
    return [
        (f"reference server ({PACKAGE}), write in batches of 500", f"{rate:.0f} facts/s"),
        (f"reference server, search via MCP (stdio), {count:,} facts", percentiles(samples)),
    ]


def measure(count: int, texts: list[str]) -> list[tuple[str, str]]:
    if shutil.which("npx") is None:
        print("reference server: skipped (npx is not installed)")
        return [("reference server", "skipped: npx is not installed")]
    rows = asyncio.run(_measure(count, texts))
    for label, value in rows:
        print(f"{label}: {value}")
    return rows
