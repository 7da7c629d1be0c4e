"""Embedders by model id: the configured one, and any other a tenant's vectors were made with
(a tenant switches model when `engram reindex` finishes, while the service keeps running)."""

from __future__ import annotations

from engram.embedding.base import Embedder
from engram.embedding.factory import build_embedder
from engram.settings import Settings


class Embedders:
    def __init__(self, settings: Settings, default: Embedder) -> None:
        self._settings = settings
        self.default = default
        self._loaded: dict[str, Embedder] = {default.model_id: default}

    def get(self, model_id: str) -> Embedder:
        if model_id not in self._loaded:
            self._loaded[model_id] = build_embedder(self._settings, model_id)
        return self._loaded[model_id]

    def close(self) -> None:
        for embedder in self._loaded.values():
            embedder.close()
