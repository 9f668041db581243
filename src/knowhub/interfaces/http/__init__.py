"""The HTTP API (``knowhub serve http``): search, retrieval diagnostics, answers (JSON,
Server-Sent Events and WebSocket), collections, documents, health and metrics."""

from knowhub.interfaces.http.api import create_app

__all__ = ["create_app"]
