"""Documents as MCP resources under a data scope (SQLite and PostgreSQL, the scope matrix
ingested with tags): each caller lists exactly the documents its scope sees, reads those,
and reads a hidden one as one that does not exist."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp import MCPError

from knowhub import App, build_app
from knowhub.interfaces.mcp import resources
from knowhub.testing.scope_matrix import SCOPES, ingest_matrix, markers_in, visible
from tests.helpers import fast_settings
from tests.pg_server import shared_server

COLLECTION = "scoped"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def matrix_app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[App]:
    root = tmp_path_factory.mktemp(request.param)
    extra: dict[str, object] = {}
    if request.param == "postgres":
        extra = {
            "store.provider": "postgres",
            "store.postgres.url": shared_server().create_database(),
        }
    app = build_app(fast_settings(root / "data", **extra))
    ingest_matrix(app, root / "docs", COLLECTION)
    yield app
    app.close()


@pytest.mark.parametrize("name", SCOPES)
def test_a_scoped_caller_lists_and_reads_only_what_its_scope_sees(
    matrix_app: App, name: str
) -> None:
    scoped = matrix_app.scoped(SCOPES[name])
    listed = resources.listed(scoped, None).resources
    assert markers_in(r.name for r in listed) == visible(SCOPES[name])
    for resource in listed:
        (text, *_) = resources.read(scoped, str(resource.uri))
        assert markers_in([text.text]) <= visible(SCOPES[name])  # type: ignore[union-attr]
    hidden = [
        str(r.uri)
        for r in resources.listed(matrix_app, None).resources
        if not markers_in([r.name]) <= visible(SCOPES[name])
    ]
    assert hidden or SCOPES[name].unrestricted
    for uri in hidden:
        with pytest.raises(MCPError, match="no document with id"):
            resources.read(scoped, uri)
        with pytest.raises(MCPError, match="no document with id"):
            resources.read(scoped, f"{uri}/chunks/0")
