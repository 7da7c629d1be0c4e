"""Reference rankers measured beside engram on the same questions (BM25 via bm25s)."""

from __future__ import annotations

from collections.abc import Callable

from engram.domain.tokenize import document_tokens, query_tokens
from engram.evaluation.datasets import EvalGroup


def bm25_ranker(group: EvalGroup, k: int) -> Callable[[str], list[str]]:
    """Plain BM25 (k1=1.5, b=0.75) over engram's tokens (stemmed English without stopwords, CJK
    bigrams and characters), so the baseline reads the same words as engram's keyword channel."""
    import bm25s  # imported lazily: only `engram eval` needs it

    ids = [m.external_id for m in group.memories]
    retriever = bm25s.BM25(k1=1.5, b=0.75)
    retriever.index([document_tokens(m.content) or ["\x00"] for m in group.memories], show_progress=False)

    def rank(query: str) -> list[str]:
        tokens = [t for t in query_tokens(query) if t in retriever.vocab_dict]
        if not tokens:
            return []
        results, scores = retriever.retrieve([tokens], k=min(k, len(ids)), show_progress=False)
        return [ids[i] for i, s in zip(results[0], scores[0], strict=True) if s > 0]

    return rank
