"""knowhub: a self-hosted knowledge base for AI agents and people.

The public API is small: build an :class:`App` from :class:`Settings` and work on a
collection's handle.

    >>> from knowhub import build_app, load_settings
    >>> app = build_app(load_settings(overrides={"data_dir": "/tmp/kb"}))  # doctest: +SKIP
    >>> handbook = app.collection("handbook")  # doctest: +SKIP
    >>> handbook.ingest([Path("docs")]); handbook.search("how are backups taken?")  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from knowhub.errors import (
    AuthError,
    ConfigError,
    IngestError,
    KnowhubError,
    LoaderError,
    ProviderError,
    QueryError,
    StoreError,
)

if TYPE_CHECKING:
    from knowhub.app import App, build_app
    from knowhub.config import Settings, load_settings
    from knowhub.models import Chunk, DocumentRecord, Hit, LoadedDocument

# Imported on first use (PEP 562): ``import knowhub.lang`` or an embedding worker process
# would otherwise load the whole App (config, store, query, answer: ~0.5 s) first.
_HOMES = {
    "App": "knowhub.app",
    "build_app": "knowhub.app",
    "Settings": "knowhub.config",
    "load_settings": "knowhub.config",
    "Chunk": "knowhub.models",
    "DocumentRecord": "knowhub.models",
    "Hit": "knowhub.models",
    "LoadedDocument": "knowhub.models",
}

__all__ = [
    "App",
    "AuthError",
    "Chunk",
    "ConfigError",
    "DocumentRecord",
    "Hit",
    "IngestError",
    "KnowhubError",
    "LoadedDocument",
    "LoaderError",
    "ProviderError",
    "QueryError",
    "Settings",
    "StoreError",
    "build_app",
    "load_settings",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'knowhub' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # found directly from now on
    return value
