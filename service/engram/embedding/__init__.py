"""Embedders: two bundled offline models and any API model through litellm."""

from engram.embedding.base import Embedder
from engram.embedding.factory import build_embedder
from engram.embedding.registry import Embedders

__all__ = ["Embedder", "Embedders", "build_embedder"]
