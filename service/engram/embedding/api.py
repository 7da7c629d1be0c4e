"""Any embedding API litellm reaches (OpenAI, Azure, Ollama, vLLM, ...), by configuration."""

from __future__ import annotations

import logging

import numpy as np

from engram.embedding.base import Embedder
from engram.errors import Unavailable
from engram.litellm_offline import litellm as offline_litellm
from engram.observability.outages import Outage

log = logging.getLogger(__name__)

PREFIX = "litellm:"


class LiteLLMEmbedder(Embedder):
    """``model_id`` is ``litellm:<litellm model name>``, e.g. ``litellm:openai/text-embedding-3-small``."""

    reentrant = True  # HTTP calls: a query need not wait for a batch's call to return

    def __init__(self, model_id: str, api_base: str | None, api_key: str | None, timeout: float = 30.0) -> None:
        super().__init__()
        self.model_id = model_id
        self._model = model_id.removeprefix(PREFIX)
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = timeout
        self._outage = Outage(log, f"embedding API {self._model}", "writes and searches answer 503 until it is back")
        # The dimension is whatever the API returns; ask once, at start-up.
        self.dim = len(self._call(["dimension probe"])[0])

    def _call(self, texts: list[str]) -> np.ndarray:
        litellm = offline_litellm()
        try:
            response = litellm.embedding(
                model=self._model,
                input=texts,
                api_base=self._api_base,
                api_key=self._api_key,
                timeout=self._timeout,
            )
        except Exception as exc:  # litellm raises provider-specific types
            self._outage.began(exc)  # logged once per outage, not per request
            raise Unavailable(f"the embedding API of {self._model!r} did not answer; retry shortly") from exc
        self._outage.ended()
        rows = sorted(response.data, key=lambda d: d["index"])
        return np.asarray([row["embedding"] for row in rows], dtype=np.float32)

    def _documents(self, texts: list[str]) -> np.ndarray:
        return self._call(texts)

    def _query(self, text: str) -> np.ndarray:
        return self._call([text])[0]
