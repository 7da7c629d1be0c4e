"""Build the configured embedder from its model id."""

from __future__ import annotations

from engram.embedding.api import PREFIX, LiteLLMEmbedder
from engram.embedding.base import Embedder
from engram.embedding.bundled import E5Small, UniversalSentenceEncoder
from engram.errors import ConfigurationError
from engram.settings import Settings

BUNDLED = {cls.model_id: cls for cls in (UniversalSentenceEncoder, E5Small)}


def build_embedder(settings: Settings, model_id: str | None = None) -> Embedder:
    """The embedder of ``model_id`` (default: the configured model)."""
    model = model_id or settings.embedding_model
    if model in BUNDLED:
        return BUNDLED[model]()
    if model.startswith(PREFIX):
        key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
        return LiteLLMEmbedder(model, settings.embedding_api_base, key)
    known = ", ".join([*BUNDLED, f"{PREFIX}<model>"])
    raise ConfigurationError(f"unknown embedding model {model!r}; choose one of: {known}")
