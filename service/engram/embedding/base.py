"""The embedder port."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor

import numpy as np


class Embedder(ABC):
    """Turns text into unit-length float32 vectors. ``model_id`` is stored with every vector."""

    model_id: str
    dim: int

    def __init__(self) -> None:
        # One worker: the models are CPU-bound and use BLAS threads of their own.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"embed-{type(self).__name__}")

    @abstractmethod
    def _documents(self, texts: list[str]) -> np.ndarray: ...

    @abstractmethod
    def _query(self, text: str) -> np.ndarray: ...

    async def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        if not texts:
            return []
        matrix = await asyncio.get_running_loop().run_in_executor(self._executor, self._documents, texts)
        return [_unit(row) for row in np.asarray(matrix, dtype=np.float32)]

    async def embed_query(self, text: str) -> np.ndarray:
        vector = await asyncio.get_running_loop().run_in_executor(self._executor, self._query, text)
        return _unit(np.asarray(vector, dtype=np.float32).reshape(-1))

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
