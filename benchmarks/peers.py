"""engram beside mem0 (its open-source library: embedded Qdrant, no LLM, ``infer=False``), on the
same facts and the same questions, with the same embedder: engram's bundled USE, handed to mem0
as its embedding model. Each side writes the facts one per call, then answers every question
sequentially; the ratios are engram's figure over mem0's.

mem0 is an optional extra (``pip install -e '.[peers]'``); without it this part is skipped.
"""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks import realistic
from benchmarks.stats import p50_p95_p99
from engram.embedding.bundled import UniversalSentenceEncoder

Rows = list[tuple[str, str]]


def _mem0(folder: Path, embedder: UniversalSentenceEncoder) -> Any:
    os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported: no posthog calls
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase

    class SameEmbedder(EmbeddingBase):
        def embed(self, text, memory_action=None):
            return embedder._query(text).tolist()

    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "qdrant",
                "config": {"collection_name": "bench", "path": str(folder / "qdrant"), "embedding_model_dims": 512},
            },
            "history_db_path": str(folder / "history.db"),
            # Never called (infer=False); mem0 builds its clients when it starts.
            "llm": {"provider": "openai", "config": {"api_key": "unused"}},
            "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": 512}},
        }
    )
    memory.embedding_model = SameEmbedder()
    return memory


def _measure_mem0(facts: list[str], questions: list[str]) -> tuple[float, list[float]]:
    folder = Path(tempfile.mkdtemp(prefix="engram-bench-mem0-"))
    embedder = UniversalSentenceEncoder()
    try:
        memory = _mem0(folder, embedder)
        started = time.perf_counter()
        for fact in facts:
            memory.add([{"role": "user", "content": fact}], user_id="bench", infer=False)
        rate = len(facts) / (time.perf_counter() - started)
        for question in questions[:20]:  # warm
            memory.search(question, filters={"user_id": "bench"}, top_k=10)
        samples = []
        for question in questions:
            started = time.perf_counter()
            memory.search(question, filters={"user_id": "bench"}, top_k=10)
            samples.append((time.perf_counter() - started) * 1000)
        return rate, samples
    finally:
        embedder.close()
        shutil.rmtree(folder, ignore_errors=True)


def _ok(response: httpx.Response) -> None:
    if response.is_error:
        raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text[:300]}")


def _measure_engram(
    url: str, tenant: str, key: str, facts: list[str], questions: list[str]
) -> tuple[float, list[float]]:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=f"{url}/t/{tenant}/v1", headers=headers, timeout=60) as client:
        started = time.perf_counter()
        for fact in facts:
            _ok(client.post("/memories", json={"content": fact}))
        rate = len(facts) / (time.perf_counter() - started)
        for question in questions[:20]:
            _ok(client.post("/search", json={"query": question, "top_k": 10}))
        samples = []
        for question in questions:
            started = time.perf_counter()
            _ok(client.post("/search", json={"query": question, "top_k": 10}))
            samples.append((time.perf_counter() - started) * 1000)
    return rate, samples


def measure(url: str, tenant: str, key: str, count: int, questions: list[str]) -> Rows:
    """Both sides on ``count`` realistic facts (English and Chinese) and the same ``questions``."""
    if importlib.util.find_spec("mem0") is None:
        print("mem0: skipped (not installed: pip install -e '.[peers]')")
        return [("mem0", "skipped: not installed (pip install -e '.[peers]')")]
    rng = random.Random(5)
    mixes = [mix for mix in realistic.MIXES if mix.kind == "fact"]
    facts = [text for mix in mixes for text in mix.texts(count // len(mixes) + 1, rng)][:count]
    theirs_rate, theirs = _measure_mem0(facts, questions)
    ours_rate, ours = _measure_engram(url, tenant, key, facts, questions)
    t50, t95, t99 = p50_p95_p99(theirs)
    o50, o95, o99 = p50_p95_p99(ours)
    rows = [
        (f"mem0 {count:,} facts, write one per call", f"{theirs_rate:.0f} facts/s"),
        (f"engram {count:,} facts, write one per call (REST)", f"{ours_rate:.0f} facts/s"),
        ("mem0 search", f"p50 {t50:.1f} ms, p95 {t95:.1f} ms, p99 {t99:.1f} ms"),
        ("engram search (REST)", f"p50 {o50:.1f} ms, p95 {o95:.1f} ms, p99 {o99:.1f} ms"),
        (
            "ratio engram / mem0",
            f"writes {ours_rate / theirs_rate:.2f}x as fast; search p50 {o50 / t50:.2f}x, p95 {o95 / t95:.2f}x "
            f"the time (below 1: engram is faster)",
        ),
    ]
    for label, value in rows:
        print(f"{label}: {value}", flush=True)
    return rows
