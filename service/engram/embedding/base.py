"""The embedder port."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engram.embedding.fair import FairTurns

# Texts a model call takes at most: a query of a model that cannot run beside documents, and
# another tenant's documents, wait behind one such call, not behind a whole batch.
DOCUMENT_CHUNK = 16


class Embedder(ABC):
    """Turns text into unit-length float32 vectors. ``model_id`` is stored with every vector.

    A search's query never queues behind a batch of documents: a ``reentrant`` model (callable
    from two threads at once) embeds queries on a worker of their own; any other model takes
    documents a few at a time, so a query slips in between. Documents of several owners take
    turns, a chunk each (embedding/fair.py)."""

    model_id: str
    dim: int
    reentrant: bool = False

    def __init__(self) -> None:
        # CPU-bound models: one worker each for documents and for queries (BLAS threads are the
        # model's own); a model that is not reentrant shares one worker for both.
        name = f"embed-{type(self).__name__}"
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name, initializer=_background)
        self._query_executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-query") if self.reentrant else self._executor
        )
        self._turns = FairTurns()
        self._idle_executor: ThreadPoolExecutor | None = None  # made on first use (few processes need it)

    @abstractmethod
    def _documents(self, texts: list[str]) -> np.ndarray: ...

    @abstractmethod
    def _query(self, text: str) -> np.ndarray: ...

    async def embed_documents(self, texts: list[str], owner: str = "") -> list[np.ndarray]:
        """Vectors of the texts, a chunk at a time: owners (tenants) take turns between chunks."""
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), DOCUMENT_CHUNK):
            async with self._turns.turn(owner):
                matrix = await loop.run_in_executor(
                    self._executor, self._documents, texts[start : start + DOCUMENT_CHUNK]
                )
            rows.extend(_unit(row) for row in np.asarray(matrix, dtype=np.float32))
        return rows

    async def language_prior(self) -> dict[str, np.ndarray]:
        """Per language, what the model's vectors share whatever the text (domain/centring.py);
        none for a model whose unrelated texts are near orthogonal."""
        return {}

    async def embed_when_idle(self, texts: list[str]) -> list[np.ndarray]:
        """Vectors of work nobody waits for (the second vectors, services/retrieval.py), on a
        thread of its own at the lowest priority: it runs on what requests leave of the CPU."""
        if not texts:
            return []
        if self._idle_executor is None:
            self._idle_executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"embed-{type(self).__name__}-idle", initializer=_idle
            )
        matrix = await asyncio.get_running_loop().run_in_executor(self._idle_executor, self._documents, texts)
        return [_unit(row) for row in np.asarray(matrix, dtype=np.float32)]

    async def embed_query(self, text: str) -> np.ndarray:
        vector = await asyncio.get_running_loop().run_in_executor(self._query_executor, self._query, text)
        return _unit(np.asarray(vector, dtype=np.float32).reshape(-1))

    def close(self) -> None:
        for executor in {self._executor, self._query_executor, self._idle_executor}:
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)


# Documents are bulk work: their worker yields the CPU to the threads serving queries (a search's
# embedding, the event loop), so one tenant's 500-item batches do not slow another's search.
BACKGROUND_NICENESS = 10
IDLE_NICENESS = 19


def _background() -> None:
    lower_priority(BACKGROUND_NICENESS)


def _idle() -> None:
    lower_priority(IDLE_NICENESS)


def lower_priority(niceness: int) -> None:
    with contextlib.suppress(OSError, AttributeError):  # Linux lowers one thread; elsewhere, nothing
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
