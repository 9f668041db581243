"""The data-scope matrix through every interface: the CLI with --as-token, the HTTP API and
MCP over HTTP with each token — hits, document lists, answers and counts show exactly what
the token's scope sees (knowhub.testing.scope_matrix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowhub import build_app
from knowhub.testing.scope_matrix import (
    SCOPES,
    TOP_K,
    WORD,
    ingest_matrix,
    markers_in,
    secret,
    server_env,
    visible,
)
from tests.helpers import fast_settings, knowhub
from tests.http_helpers import api_server
from tests.mcp_helpers import http_server

COLLECTION = "scoped"
pytestmark = pytest.mark.anyio


ENV = server_env()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the matrix in collection ``scoped``."""
    root = tmp_path_factory.mktemp("scope")
    app = build_app(fast_settings(root / "data"))
    try:
        ingest_matrix(app, root / "docs", COLLECTION)
    finally:
        app.close()
    return root


@pytest.mark.parametrize("name", SCOPES)
def test_cli_as_token_searches_and_lists_only_its_scope(root: Path, name: str) -> None:
    base = ("--data-dir", "data", "--as-token", name)
    found = knowhub(
        *base, "search", WORD, "-c", COLLECTION, "-k", str(TOP_K), "--json", cwd=root, env=ENV
    )
    assert found.returncode == 0, found.stderr
    assert markers_in([found.stdout]) == visible(SCOPES[name])
    listed = knowhub(*base, "docs", "-c", COLLECTION, "--json", cwd=root, env=ENV)
    assert listed.returncode == 0, listed.stderr
    assert markers_in([listed.stdout]) == visible(SCOPES[name])


def test_cli_as_an_unknown_token_names_the_known_ones(root: Path) -> None:
    run = knowhub(
        "--data-dir", "data", "--as-token", "nobody", "docs", "-c", COLLECTION, cwd=root, env=ENV
    )
    assert run.returncode != 0
    assert "--as-token 'nobody': no such token in server.tokens (known: admin" in run.stderr


def test_http_api_shows_each_token_only_its_scope(root: Path) -> None:
    with api_server(cwd=root, data_dir=root / "data", env=ENV) as server:
        for name, scope in SCOPES.items():
            token, expected = secret(name), visible(scope)
            body = {"query": WORD, "collection": COLLECTION, "top_k": TOP_K}
            hits = server.post("/api/search", token, json=body).json()["hits"]
            assert markers_in(h["text"] for h in hits) == expected, name
            docs = server.get(f"/api/documents?collection={COLLECTION}", token).json()
            assert markers_in(d["source"] for d in docs["documents"]) == expected, name
            [view] = server.get("/api/collections", token).json()["collections"]
            assert view["documents"] == len(expected), name
            answer = server.post(
                "/api/ask", token, json={"question": f"{WORD} handbook", "collection": COLLECTION}
            ).json()
            assert markers_in([json.dumps(answer)]) <= expected, name
            metrics = server.get("/metrics", token).text
            assert ("knowhub_index_documents{" in metrics) == scope.unrestricted, name


async def test_mcp_over_http_shows_each_token_only_its_scope(root: Path) -> None:
    with http_server(cwd=root, data_dir=root / "data", env=ENV) as server:
        for name, scope in SCOPES.items():
            expected = visible(scope)
            async with server.client(token=secret(name)) as client:
                found = await _call(
                    client, "query_knowledge_hub", query=WORD, collection=COLLECTION, top_k=TOP_K
                )
                assert markers_in([json.dumps(found)]) == expected, name
                listed = await _call(client, "list_collections")
                [view] = [c for c in listed["collections"] if c["name"] == COLLECTION]
                assert view["documents"] == len(expected), name
                answer = await _call(
                    client, "ask", question=f"{WORD} handbook", collection=COLLECTION
                )
                assert markers_in([json.dumps(answer)]) <= expected, name


async def _call(client: Any, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    structured: dict[str, Any] = result.structured_content
    return structured
