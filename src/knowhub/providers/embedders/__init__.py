"""Embedding providers."""

from knowhub.providers.embedders.base import Embedder

__all__ = ["Embedder"]
