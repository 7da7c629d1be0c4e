"""The noise level of an embedder: how high the centred cosine of a question and a memory that
does not answer it reaches (domain/fusion.py vector_evidence: no evidence at or below it).

    python -m benchmarks.noise [--model multilingual-e5-small] [--data ../shared/data]

On the dev groups of engram's paraphrase set and MADial (zh, en): every memory of a group is
embedded, centred as a search centres it (the group's language means, shrunk towards the model's
prior), and each question is compared with every memory that is not its answer. Prints the 50th,
90th and 99th percentiles of those cosines, and the answers' own; the noise chosen is the 90th
percentile of the non-answers, averaged over the sets (thresholds.json keeps it per model).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import numpy as np

from engram.domain.centring import SHRINK
from engram.domain.text import guess_language
from engram.embedding.factory import build_embedder
from engram.evaluation.datasets import load
from engram.settings import Settings

SETS = ("paraphrase", "madial-en", "madial-zh")


async def measure(model: str, data: Path) -> float:
    embedder = build_embedder(Settings(), model)
    prior = await embedder.language_prior()
    chosen = []
    for name in SETS:
        corpus = load(name, data)
        others, answers = [], []
        for group in corpus.groups:
            if group.split not in ("dev", "none"):
                continue
            vectors = np.stack(await embedder.embed_documents([m.content for m in group.memories]))
            languages = [guess_language(m.content) for m in group.memories]
            means = {}
            for language in ("en", "zh", "und"):
                rows = [i for i, x in enumerate(languages) if x == language]
                total = vectors[rows].sum(axis=0) if rows else np.zeros(vectors.shape[1], np.float32)
                means[language] = (total + SHRINK * prior.get(language, 0)) / (len(rows) + SHRINK)
            centred = np.stack([_unit(v - means[x]) for v, x in zip(vectors, languages, strict=True)])
            ids = [m.external_id for m in group.memories]
            for question in group.questions:
                query = _unit(await embedder.embed_query(question.text) - means[guess_language(question.text)])
                cosines = centred @ query
                answers += [c for i, c in zip(ids, cosines, strict=True) if i in question.gold]
                others += [c for i, c in zip(ids, cosines, strict=True) if i not in question.gold]
        p50, p90, p99 = np.percentile(others, [50, 90, 99])
        print(
            f"{name}: not the answer p50 {p50:.3f} p90 {p90:.3f} p99 {p99:.3f}; "
            f"the answer p10 {np.percentile(answers, 10):.3f} p50 {np.median(answers):.3f}"
        )
        chosen.append(p90)
    embedder.close()
    noise = float(np.mean(chosen))
    print(f"{model}: noise {noise:.2f} (the 90th percentiles' mean)")
    return noise


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    asyncio.run(measure(args.model, args.data))


if __name__ == "__main__":
    main()
