"""What a cut of long texts would cost in recall and save in time (issue 15's long-text policy).

LoCoMo's conversations are joined into chat turns of 100-300 words (consecutive lines, as
benchmarks/realistic.py makes them); a question's gold turns are those holding one of its gold
lines. Each turn is embedded whole, cut to its first N pieces, or cut into windows of N pieces whose
vectors are averaged; every question ranks its conversation's turns by cosine (the vector channel
alone). Prints the share of questions with a gold turn in the top 5, and the embedding rate of
each policy. Asserts nothing.

    python -m benchmarks.long_texts [--pieces 64,128,192]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from benchmarks import realistic
from engram.embedding.bundled import UniversalSentenceEncoder
from engram.evaluation.datasets import load


def turns_of(memories, rng: random.Random) -> list[tuple[str, set[str]]]:
    """Consecutive lines joined up to a length drawn from 100-300 words: (text, ids of its lines)."""
    turns, words, text, ids = [], rng.randint(100, 300), [], set()
    for memory in memories:
        text.append(memory.content)
        ids.add(memory.external_id)
        if sum(len(t.split()) for t in text) >= words:
            turns.append((" ".join(text), ids))
            words, text, ids = rng.randint(100, 300), [], set()
    if text:
        turns.append((" ".join(text), ids))
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pieces", default="64,128,192", help="cut lengths, in sentencepiece pieces")
    args = parser.parse_args()
    if reason := realistic.missing():
        raise SystemExit(f"skipped: {reason}")
    cuts = [int(n) for n in args.pieces.split(",")]
    embedder = UniversalSentenceEncoder()
    pieces = embedder._model._tokenizer
    corpus = load("locomo", realistic.DATA)
    rng = random.Random(3)
    groups = []
    for group in corpus.groups:
        turns = turns_of(group.memories, rng)
        asked = [(q.text, q.gold) for q in group.questions if q.gold]
        groups.append((turns, asked))
    texts = [text for turns, _ in groups for text, _ in turns]
    lengths = np.array([len(pieces.encode(t)) for t in texts])
    print(
        f"{len(texts)} turns from {len(groups)} conversations: pieces p50 {np.median(lengths):.0f}, "
        f"p95 {np.percentile(lengths, 95):.0f}; {sum(len(a) for _, a in groups)} questions"
    )

    def cut(text: str, n: int) -> str:
        return pieces.decode(pieces.encode(text)[:n])

    def windows(text: str, n: int) -> list[str]:
        ids = pieces.encode(text)
        return [pieces.decode(ids[i : i + n]) for i in range(0, len(ids), n)]

    def pooled(n: int) -> np.ndarray:
        parts = [windows(t, n) for t in texts]
        flat = embedder._documents([p for ps in parts for p in ps])
        out, at = [], 0
        for ps in parts:
            mean = flat[at : at + len(ps)].mean(axis=0)
            out.append(mean / np.linalg.norm(mean))
            at += len(ps)
        return np.stack(out)

    policies = {"whole turn": lambda: embedder._documents(texts)}
    for n in cuts:
        policies[f"first {n} pieces"] = lambda n=n: embedder._documents([cut(t, n) for t in texts])
        policies[f"windows of {n} pieces, averaged"] = lambda n=n: pooled(n)
    print("| policy | questions with a gold turn in the top 5 (vector alone) | turns embedded/s |\n|---|---:|---:|")
    for name, embed in policies.items():
        started = time.perf_counter()
        vectors = embed()
        rate = len(texts) / (time.perf_counter() - started)
        hits = total = at = 0
        for turns, asked in groups:
            mine = vectors[at : at + len(turns)]
            at += len(turns)
            for question, gold in asked:
                query = embedder._query(question)
                top = np.argsort(-(mine @ query))[:5]
                hits += any(turns[i][1] & gold for i in top)
                total += 1
        print(f"| {name} | {hits / total:.3f} | {rate:.0f} |", flush=True)
    embedder.close()


if __name__ == "__main__":
    main()
