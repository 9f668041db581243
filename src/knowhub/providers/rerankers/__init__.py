"""Reranking providers: rescore (query, passage) pairs after fusion."""

from knowhub.providers.rerankers.base import Reranker

__all__ = ["Reranker"]
