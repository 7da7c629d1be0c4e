"""Embedders: two bundled offline models and any API model through litellm."""

from engram.embedding.base import Embedder
from engram.embedding.factory import build_embedder

__all__ = ["Embedder", "build_embedder"]
