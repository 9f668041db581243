"""The one exception tree of knowhub.

Every error raised on purpose by knowhub derives from :class:`KnowhubError`;
its message says what failed, the offending value, and how to fix it::

    KnowhubError
    ├── ConfigError      bad configuration value, unknown provider, missing extra
    ├── ProviderError    an embedder / store backend failed or is misconfigured
    ├── IngestError      one file could not be loaded or indexed
    │   └── LoaderError  the file's format is unsupported, corrupt, encrypted or empty
    │       ├── OcrUnavailableError  a scan not read: OCR off or unavailable, no text
    │       └── UnsupportedFileError  its content is of no type knowhub reads (a man page source)
    ├── StoreError       the store is unreadable, locked, or holds a mismatched index
    ├── QueryError       invalid query arguments (top_k, min_score, filters, collection)
    │   └── CollectionNotFound  no collection (or version) of that name: also a StoreError
    └── AuthError        missing or wrong credentials (HTTP/MCP interfaces)

Interfaces (CLI, MCP, HTTP) turn these into their own kind of error; library code
raises them and always chains the underlying cause.
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "CollectionNotFound",
    "ConfigError",
    "IngestError",
    "KnowhubError",
    "LoaderError",
    "OcrUnavailableError",
    "ProviderError",
    "QueryError",
    "StoreError",
    "UnsupportedFileError",
]


class KnowhubError(Exception):
    """Root of every error knowhub raises on purpose."""


class ConfigError(KnowhubError):
    """A configuration value, provider name or optional extra is wrong or missing."""


class ProviderError(KnowhubError):
    """A provider (embedder, store, …) failed."""


class IngestError(KnowhubError):
    """A file could not be ingested."""


class LoaderError(IngestError):
    """A file's content could not be turned into text (unsupported, corrupt, encrypted, empty)."""


class OcrUnavailableError(LoaderError):
    """A scan (a PDF without a text layer, an image) was not read because OCR is off, or
    cannot run here (no OCR engine or language data), or an image held no text to read:
    ingest skips such a file in a folder, where it fails a broken one. ``problem`` is the
    reason without the file's path."""

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


class UnsupportedFileError(LoaderError):
    """A file whose name gives no format holds no UTF-8 text (a man page's roff source, a
    binary), or a compressed file holds a format knowhub does not read: ingest skips it in a
    folder, as a file of an unsupported type, and fails it when named. ``problem`` is the
    reason without the file's path."""

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


class StoreError(KnowhubError):
    """The store could not be opened, read or written consistently."""


class QueryError(KnowhubError):
    """A search request has invalid arguments."""


class CollectionNotFound(QueryError, StoreError):  # noqa: N818 - it reads as the 404 it is
    """A request named a collection (or a version of one) the store does not hold.

    Both a QueryError (the caller's argument is wrong) and a StoreError (what a backend
    raised for it before), so every interface maps it to one "not found" answer (HTTP 404).
    """


class AuthError(KnowhubError):
    """A request carried missing or wrong credentials."""
