"""The embedder port."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# Texts a model call takes at most when it cannot run beside a query: a query waits behind one
# such call, not behind a whole batch of another tenant's transcript.
SHARED_CHUNK = 16


class Embedder(ABC):
    """Turns text into unit-length float32 vectors. ``model_id`` is stored with every vector.

    A search's query never queues behind a batch of documents: a ``reentrant`` model (callable
    from two threads at once) embeds queries on a worker of their own; any other model takes
    documents a few at a time, so a query slips in between."""

    model_id: str
    dim: int
    reentrant: bool = False

    def __init__(self) -> None:
        # CPU-bound models: one worker each for documents and for queries (BLAS threads are the
        # model's own); a model that is not reentrant shares one worker for both.
        name = f"embed-{type(self).__name__}"
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._query_executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-query") if self.reentrant else self._executor
        )

    @abstractmethod
    def _documents(self, texts: list[str]) -> np.ndarray: ...

    @abstractmethod
    def _query(self, text: str) -> np.ndarray: ...

    async def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        step = len(texts) if self.reentrant else SHARED_CHUNK
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), step):
            matrix = await loop.run_in_executor(self._executor, self._documents, texts[start : start + step])
            rows.extend(_unit(row) for row in np.asarray(matrix, dtype=np.float32))
        return rows

    async def embed_query(self, text: str) -> np.ndarray:
        vector = await asyncio.get_running_loop().run_in_executor(self._query_executor, self._query, text)
        return _unit(np.asarray(vector, dtype=np.float32).reshape(-1))

    def close(self) -> None:
        for executor in {self._executor, self._query_executor}:
            executor.shutdown(wait=False, cancel_futures=True)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
