"""Embedders by model id: the configured one, and any other a tenant's vectors were made with
(a tenant switches model when `engram reindex` finishes, while the service keeps running), or
the second vector channel needs.

Loading a bundled model compiles its graph (seconds of CPU): ``load`` does it on a thread, once,
so the event loop never stops for it; ``ready`` answers only with a model already loaded, for a
search that must not wait (the second channel sits a search out while its model loads)."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from engram.embedding.base import IDLE_NICENESS, Embedder, lower_priority
from engram.embedding.factory import build_embedder
from engram.settings import Settings

log = logging.getLogger("engram.embedding")


class Embedders:
    def __init__(self, settings: Settings, default: Embedder) -> None:
        self._settings = settings
        self.default = default
        self._loaded: dict[str, Embedder] = {default.model_id: default}
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self._loading: dict[str, asyncio.Future[Embedder]] = {}

    def get(self, model_id: str) -> Embedder:
        """The model, loaded now if it is not yet (in the calling thread: see ``load``)."""
        found = self._loaded.get(model_id)
        if found is not None:  # no lock: another model compiling must not stop this caller
            return found
        with self._lock:
            building = self._building.setdefault(model_id, threading.Lock())
        with building:  # one build per model; other models' callers go on
            if model_id not in self._loaded:
                self._loaded[model_id] = build_embedder(self._settings, model_id)
            return self._loaded[model_id]

    async def load(self, model_id: str) -> Embedder:
        """The model, loaded on a thread if it is not yet."""
        found = self._loaded.get(model_id)
        if found is not None:
            return found
        # Compiling is work nobody waits for: on a thread of its own at the lowest priority, so
        # the first requests of a service just started are not slowed by it.
        compiler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-load", initializer=_idle)
        try:
            return await asyncio.get_running_loop().run_in_executor(compiler, self.get, model_id)
        finally:
            compiler.shutdown(wait=False)

    def is_loaded(self, model_id: str) -> bool:
        return model_id in self._loaded

    def ready(self, model_id: str) -> Embedder | None:
        """The model if it is loaded; else None, and it starts loading in the background."""
        found = self._loaded.get(model_id)
        if found is None and model_id not in self._loading:
            loading = self._loading[model_id] = asyncio.ensure_future(self.load(model_id))
            loading.add_done_callback(functools.partial(_said_if_failed, model_id))
        return found

    def close(self) -> None:
        for pending in self._loading.values():
            pending.cancel()
        for embedder in self._loaded.values():
            embedder.close()


def _idle() -> None:
    lower_priority(IDLE_NICENESS)


def _said_if_failed(model_id: str, loading: asyncio.Future[Embedder]) -> None:
    """A model loaded for nobody who waits: its failure is said once, here (searches go on without it)."""
    if not loading.cancelled() and (error := loading.exception()) is not None:
        log.warning(
            "model %s could not be loaded (%s: %s); searches go without it", model_id, type(error).__name__, error
        )
