"""knowhub: a self-hosted knowledge base for AI agents and people.

The public API is small: build an :class:`App` from :class:`Settings` and call it.

    >>> from knowhub import build_app, load_settings
    >>> app = build_app(load_settings(overrides={"data_dir": "/tmp/kb"}))  # doctest: +SKIP
    >>> app.ingest([Path("docs")]); app.search("how are backups taken?")  # doctest: +SKIP
"""

from knowhub.app import App, build_app
from knowhub.config import Settings, load_settings
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
from knowhub.models import Chunk, DocumentRecord, Hit, LoadedDocument

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
