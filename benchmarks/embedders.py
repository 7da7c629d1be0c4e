"""Speed of the bundled embedders on this machine: documents/s batched and ms per query.

    python benchmarks/embedders.py

Quality figures (LoCoMo, bilingual probes) come from `make eval`; see docs/embedders.md.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from engram.embedding.bundled import E5Small, UniversalSentenceEncoder

DOCUMENTS = [f"The user's order {i} was delayed because of the storm in city {i % 17}" for i in range(256)]
QUERIES = [f"what happened to order {i}?" for i in range(30)]


async def measure(embedder) -> None:
    await embedder.embed_query("warm up")
    started = time.perf_counter()
    await embedder.embed_documents(DOCUMENTS)
    rate = len(DOCUMENTS) / (time.perf_counter() - started)
    samples = []
    for query in QUERIES:
        started = time.perf_counter()
        await embedder.embed_query(query)
        samples.append((time.perf_counter() - started) * 1000)
    print(
        f"{embedder.model_id:24} dim {embedder.dim:4}   {rate:7.1f} documents/s   "
        f"{statistics.median(samples):5.1f} ms per query (median)"
    )
    embedder.close()


async def main() -> None:
    for cls in (UniversalSentenceEncoder, E5Small):
        await measure(cls())


if __name__ == "__main__":
    asyncio.run(main())
