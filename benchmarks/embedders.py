"""Speed of the bundled embedders on this machine, on realistic text (benchmarks/realistic.py):
documents/s batched for each mix, and the query embedding's latency on real questions.

    python -m benchmarks.embedders [--models use-multilingual-v3,multilingual-e5-small]

Quality figures (LoCoMo, MADial) come from `engram eval`; see docs/embedders.md.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from benchmarks import realistic
from benchmarks.bench import percentiles
from engram.embedding.factory import BUNDLED

BATCH = {"fact": 512, "turn": 128}


async def measure(model_id: str, rng: random.Random) -> list[tuple[str, str]]:
    embedder = BUNDLED[model_id]()
    rows = []
    try:
        await embedder.embed_query("warm up")
        for mix in realistic.MIXES:
            texts = mix.texts(BATCH[mix.kind], rng)
            started = time.perf_counter()
            await embedder.embed_documents(texts)
            rate = len(texts) / (time.perf_counter() - started)
            rows.append((f"{model_id}, {mix.name}, batched", f"{rate:.0f} documents/s"))
        for language in ("en", "zh"):
            samples = []
            for question in rng.sample(realistic.questions(language), 200):
                started = time.perf_counter()
                await embedder.embed_query(question)
                samples.append((time.perf_counter() - started) * 1000)
            rows.append((f"{model_id}, query embedding, {language}", percentiles(samples)))
    finally:
        embedder.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(BUNDLED))
    args = parser.parse_args()
    if reason := realistic.missing():
        raise SystemExit(f"skipped: {reason}")
    print("\n".join(realistic.describe()))
    print("\n| measure | result |\n|---|---|")
    for model_id in args.models.split(","):
        for label, value in asyncio.run(measure(model_id, random.Random(3))):
            print(f"| {label} | {value} |", flush=True)


if __name__ == "__main__":
    main()
