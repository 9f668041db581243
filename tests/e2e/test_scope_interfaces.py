"""The data-scope matrix through every interface: the CLI with --as-token, the HTTP API and
MCP over HTTP with each token, and chats (the scripted model calling knowhub's tools) —
hits, document lists, answers, tool results and counts show exactly what the token's scope
sees (knowhub.testing.scope_matrix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowhub import build_app
from knowhub.agent.chat import SCOPED_NOTE
from knowhub.testing.llm_server import Reply, ToolReply, serve
from knowhub.testing.scope_matrix import (
    MATRIX,
    SCOPES,
    TOP_K,
    WORD,
    ingest_matrix,
    markers_in,
    secret,
    server_env,
    token_entries,
    visible,
)
from tests.helpers import fast_settings, knowhub, write
from tests.http_helpers import api_server
from tests.mcp_helpers import http_server
from tests.pg_server import shared_server

COLLECTION = "scoped"
pytestmark = pytest.mark.anyio


ENV = server_env()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def root(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose data dir holds the matrix in collection ``scoped``; on PostgreSQL its
    knowhub.yaml names the store, read by every command and server run in it."""
    root = tmp_path_factory.mktemp(f"scope-{request.param}")
    if request.param == "postgres":
        url = shared_server().create_database()
        store = {"store": {"provider": "postgres", "postgres": {"url": url}}}
        write(root / "knowhub.yaml", json.dumps(store))  # JSON is YAML
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


def test_cli_as_token_applies_its_read_only_and_collections_limits(root: Path) -> None:
    limited = [
        {"name": "reader", "token_env": "KH_SCOPE_R", "read_only": True},
        {"name": "other-only", "token_env": "KH_SCOPE_O", "collections": ["other"]},
    ]
    env = {**ENV, "KNOWHUB_SERVER__TOKENS": json.dumps([*token_entries(), *limited])}
    doc = write(root / "more" / "extra.md", f"# extra\n\nThe {WORD} extra page.\n")
    base = ("--data-dir", "data", "--as-token")
    ingest = knowhub(*base, "reader", "ingest", str(doc), "-c", COLLECTION, cwd=root, env=env)
    assert ingest.returncode != 0
    assert "token 'reader' is read-only: it may not ingest" in ingest.stderr
    assert (
        knowhub(*base, "reader", "search", WORD, "-c", COLLECTION, cwd=root, env=env).returncode
        == 0
    )
    other = knowhub(*base, "other-only", "search", WORD, "-c", COLLECTION, cwd=root, env=env)
    assert other.returncode != 0
    assert f"token 'other-only' may not read collection {COLLECTION!r}" in other.stderr
    listed = knowhub(*base, "other-only", "collections", "--json", cwd=root, env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stdout
    docs = knowhub("--data-dir", "data", "docs", "-c", COLLECTION, "--json", cwd=root)
    assert "extra.md" not in docs.stdout  # the refused ingest wrote nothing


def test_traces_filter_by_the_tenant_their_scope_named(root: Path) -> None:
    for name in ("acme-internal", "globex-restricted-support", "admin"):
        run = knowhub(
            "--data-dir",
            "data",
            "--as-token",
            name,
            "search",
            f"tenant {name}",
            "-c",
            COLLECTION,
            cwd=root,
            env=ENV,
        )
        assert run.returncode == 0, run.stderr
    for tenant, asked in (
        ("acme", "acme-internal"),
        ("globex", "globex-restricted-support"),
        ("*", "admin"),
    ):
        listed = knowhub(
            "--data-dir",
            "data",
            "traces",
            "--tenant",
            tenant,
            "--json",
            "--limit",
            "1000",
            cwd=root,
        )
        assert listed.returncode == 0, listed.stderr
        runs = json.loads(listed.stdout)["traces"]
        assert all(tenant in r["scope"]["tenants"] for r in runs), tenant
        assert {r["query"] for r in runs if r["query"].startswith("tenant ")} == {f"tenant {asked}"}


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
            assert ("version" in view) == scope.unrestricted, name  # others' write activity
            answer = server.post(
                "/api/ask", token, json={"question": f"{WORD} handbook", "collection": COLLECTION}
            ).json()
            assert markers_in([json.dumps(answer)]) <= expected, name
            asked = [{"role": "user", "content": f"{WORD} handbook"}]
            completion = server.post(
                "/v1/chat/completions", token, json={"model": COLLECTION, "messages": asked}
            ).json()
            assert completion["choices"][0]["message"]["citations"], name
            assert markers_in([json.dumps(completion)]) <= expected, name
            metrics = server.get("/metrics", token).text
            assert ("knowhub_index_documents{" in metrics) == scope.unrestricted, name
            health = server.get("/health", token).json()
            assert ("documents" in json.dumps(health)) == scope.unrestricted, name


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


def _chat_script(chunk_ids: list[str]) -> Any:
    """The model: search, list the collections and read every matrix chunk by id, then
    answer with every tool result (so the answer holds all its tools returned)."""

    def script(body: dict[str, Any]) -> Reply:
        results = [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        if results:
            return "\n".join(results)
        search = {"query": WORD, "collection": COLLECTION, "top_k": TOP_K}
        return [
            ToolReply("knowhub__search", search),
            ToolReply("knowhub__list_collections", {}),
            *(ToolReply("knowhub__get_chunk", {"chunk_id": c}) for c in chunk_ids),
        ]

    return script


def test_chats_tools_see_only_the_tokens_scope(root: Path) -> None:
    app = build_app(fast_settings(root / "data"))
    try:
        chunk_ids = [
            app.collection(COLLECTION).search(d.marker, top_k=1).hits[0].chunk_id for d in MATRIX
        ]
    finally:
        app.close()
    # A server no scoped caller is offered (it would fail to start for the others).
    servers = {"mcpServers": {"elsewhere": {"command": str(root / "no-such-server")}}}
    config = write(root / "mcp.json", json.dumps(servers))
    with serve(script=_chat_script(chunk_ids)) as llm:
        env = {**ENV, **_llm_env(llm.openai_base), "KNOWHUB_AGENT__MCP_CONFIG": str(config)}
        with api_server(cwd=root, data_dir=root / "data", env=env) as server:
            for name, scope in SCOPES.items():
                body = {"question": f"what does the {WORD} handbook say", "collection": COLLECTION}
                response = server.post("/api/chat", secret(name), json=body)
                assert response.status_code == 200, (name, response.text)
                end = response.json()
                assert markers_in([end["answer"]]) == visible(scope), name
                assert f"{COLLECTION}: {len(visible(scope))} documents" in end["answer"], name
                assert markers_in(c["source"] for c in end["citations"]) <= visible(scope)
                assert (SCOPED_NOTE in end["notes"]) != scope.unrestricted, name


def _llm_env(base_url: str) -> dict[str, str]:
    return {
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__BASE_URL": base_url,
        "KNOWHUB_LLM__MODEL": "gpt-4o-mini",
        "KNOWHUB_LLM__BACKOFF_S": "0",
    }


async def test_an_mcp_ingest_cannot_retag_a_hidden_document_into_view(tmp_path: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        ingest_matrix(app, tmp_path / "docs", COLLECTION)
    finally:
        app.close()
    hidden = "mglobexrestrictedsupport"
    with http_server("--docs", "docs", cwd=tmp_path, data_dir=tmp_path / "data", env=ENV) as mcp:
        async with mcp.client(token=secret("acme-internal")) as client:
            tags = {"tenant": "acme", "visibility": "internal"}
            done = await _call(
                client, "ingest", path=f"{hidden}.md", collection=COLLECTION, tags=tags
            )
            assert hidden not in json.dumps(done)  # not touched, nor heard of
            found = await _call(
                client, "query_knowledge_hub", query=hidden, collection=COLLECTION, top_k=TOP_K
            )
            assert hidden not in json.dumps(found["hits"])
