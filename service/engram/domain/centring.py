"""Centring the vector channel on each language's mean (pure).

A multilingual sentence model puts every Chinese sentence a little closer to every other Chinese
sentence, and every "The user ..." closer to every other "The user ...": measured raw, a
memory in the query's own language that has nothing to do with it can look as similar as the
answer written in the other language. Subtracting from each vector the mean of the tenant's
memories of its language (and from the query the mean of its language) leaves what a memory says
rather than how it is said, so cosine similarity means the same across languages and templates.

The means come from per-language vector sums the database keeps (migration 0005). A language
with few memories is centred less: its mean is shrunk by n / (n + SHRINK) towards the model's
prior, so a new tenant's three memories are compared almost as the model compares any texts.
The prior is zero for a model whose unrelated texts are near orthogonal (USE); a model whose
every vector shares one direction (e5: cosine 0.7-0.8 between unrelated texts) brings the mean
of everyday statements of each language (embedding/bundled.py), or it would take any memory of a
small tenant for an answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LANGUAGES = ("zh", "en", "und")
SHRINK = 20


@dataclass(frozen=True)
class Centring:
    query: np.ndarray  # the query minus its language's mean, unit length
    means: dict[str, np.ndarray] = field(default_factory=dict)  # per memory language, shrunk

    def mean(self, language: str) -> np.ndarray:
        found = self.means.get(language)
        return found if found is not None else np.zeros_like(self.query)


def centre(
    query: np.ndarray,
    language: str,
    sums: dict[str, tuple[np.ndarray, int]],
    prior: dict[str, np.ndarray] | None = None,
) -> Centring:
    """The query centred on its language's mean, and every language's mean, shrunk towards the
    model's ``prior`` (none: zero) while its memories are few."""
    query = np.asarray(query, dtype=np.float32)
    prior = prior or {}
    zero = np.zeros_like(query)
    means = {
        lang: ((total + SHRINK * prior.get(lang, zero)) / (count + SHRINK)).astype(np.float32)
        for lang, (total, count) in sums.items()
    }
    means = {**{lang: p.astype(np.float32) for lang, p in prior.items()}, **means}
    centred = query - means.get(language, np.zeros_like(query))
    length = float(np.linalg.norm(centred))
    return Centring(query=centred / length if length > 1e-6 else query, means=means)


def centred_cosine(memory: np.ndarray, language: str, centring: Centring) -> float:
    """The same quantity the database computes for a candidate (store/memories.py, hydrate)."""
    shifted = memory - centring.mean(language)
    length = float(np.linalg.norm(shifted))
    return float(np.dot(shifted, centring.query) / length) if length > 1e-6 else 0.0
