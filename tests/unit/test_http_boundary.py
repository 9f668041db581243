"""The HTTP server's one error boundary: a route raises, the app's handlers answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from starlette.testclient import TestClient

from knowhub import build_app
from knowhub.errors import CollectionNotFound, QueryError
from knowhub.interfaces.http.boundary import add_error_handlers
from knowhub.interfaces.http.deps import attach
from knowhub.interfaces.http.errors import error_status
from knowhub.interfaces.http.limits import ServerBusyError
from knowhub.interfaces.http.metrics import ApiMetrics
from knowhub.interfaces.http.service import Service, note_collection
from knowhub.interfaces.security import TokenBook
from tests.helpers import fast_settings


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """An app whose routes only raise, behind the server's own handlers."""
    settings = fast_settings(tmp_path / "data")
    app = build_app(settings)
    api = FastAPI()
    attach(api, Service(app, settings, ApiMetrics()), TokenBook(settings))
    add_error_handlers(api)

    @api.get("/bug")
    async def bug() -> None:
        raise RuntimeError("secret internals")

    @api.get("/missing")
    async def missing(request: Request) -> None:
        note_collection(request, "handbook")
        raise CollectionNotFound("no collection 'handbook' in the store")

    @api.get("/missing-unnamed")
    async def missing_unnamed() -> None:
        raise CollectionNotFound("no collection 'handbook' in the store")

    @api.get("/busy")
    async def busy() -> None:
        raise ServerBusyError.full("worker", 4, 8)

    @api.get("/ui/page")
    async def page() -> None:
        raise QueryError("k 'x' is not a whole number")

    try:
        # raise_server_exceptions stays on: a bug must be answered, not raised past the app.
        with TestClient(api, base_url="http://127.0.0.1") as test_client:
            yield test_client
    finally:
        app.close()


def test_a_bug_is_answered_500_without_its_text(client: TestClient) -> None:
    response = client.get("/bug")
    assert response.status_code == 500
    assert response.json() == {"error": "internal error: see the server log", "status": 500}


def test_a_collection_not_found_is_404_naming_the_requested_collection(
    client: TestClient,
) -> None:
    response = client.get("/missing")
    assert response.status_code == 404
    assert response.json()["error"].startswith("unknown collection 'handbook': ingest into it")


def test_a_collection_not_found_without_a_noted_collection_keeps_its_message(
    client: TestClient,
) -> None:
    response = client.get("/missing-unnamed")
    assert response.json() == {"error": "no collection 'handbook' in the store", "status": 404}
    assert error_status(CollectionNotFound("x")) == 404


def test_a_busy_server_says_when_to_retry(client: TestClient) -> None:
    response = client.get("/busy")
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"


def test_a_console_page_fails_as_a_page(client: TestClient) -> None:
    response = client.get("/ui/page")
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/html")
    assert "k &#39;x&#39; is not a whole number" in response.text
