"""``sources:`` in knowhub.yaml, against a real nginx on 127.0.0.1: ``knowhub sync``
refreshes them (a report per source, a re-run answered 304), and ``serve http`` refreshes
them on their interval through the owner's door, keeping when it did across restarts."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from knowhub import build_app
from tests.helpers import WAIT_S, fast_settings, knowhub, write
from tests.http_helpers import FULL, TOKEN_ENV, api_server
from tests.integration.test_mcp_memory import local, ok
from tests.mcp_helpers import eventually
from tests.web_site import Site, nginx_site


def _config(root: Path, site: Site, refresh: str) -> None:
    write(
        root / "knowhub.yaml",
        "ingest:\n  web:\n    allow_private_networks: [127.0.0.0/8]\n"
        "sources:\n"
        f"  - url: {site.url('docs/tutorial/')}\n"
        "    name: tutorial\n    collection: docs\n"
        f"    refresh: {refresh}\n    depth: 1\n    exclude: ['*/big.html', '*/private/*']\n",
    )


def test_knowhub_sync_refreshes_each_source_and_a_rerun_reembeds_nothing(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with nginx_site(tmp_path) as site:
        _config(tmp_path, site, "manual")
        first = knowhub("--data-dir", data, "sync", "--json", cwd=tmp_path)
        again = knowhub("--data-dir", data, "sync", "tutorial", cwd=tmp_path)
        unknown = knowhub("--data-dir", data, "sync", "nosuch", cwd=tmp_path)
    [run] = json.loads(first.stdout)
    assert run["name"] == "tutorial" and run["report"]["collection"] == "docs"
    assert site.url("docs/tutorial/controlflow.html") in run["report"]["added"]
    assert "syncing tutorial" in first.stderr
    assert "tutorial: pages: " in again.stdout and "not modified" in again.stdout
    assert "0 added, 0 updated" in again.stdout
    assert unknown.returncode == 1 and "no source named nosuch" in unknown.stderr
    assert "known: tutorial" in unknown.stderr


def test_serve_http_refreshes_sources_on_their_interval(tmp_path: Path) -> None:
    data = tmp_path / "data"
    refreshed = data / "sources" / "refreshed.json"
    with nginx_site(tmp_path) as site:
        _config(tmp_path, site, "6h")
        with api_server(cwd=tmp_path, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
            deadline = time.monotonic() + WAIT_S
            while not refreshed.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert refreshed.exists(), server.logs()
            phrase = "differs a bit from what you may be used to in C or Pascal"
            found = server.post("/api/search", json={"query": phrase, "collection": "docs"})
            hit = next(h for h in found.json()["hits"] if phrase in " ".join(h["text"].split()))
            assert hit["url"] == site.url("docs/tutorial/controlflow.html#for-statements")
            logged = len(site.access_statuses())
        first = json.loads(refreshed.read_text())["tutorial"]
        # Restarted within the interval: nothing is due, nothing is fetched again.
        with api_server(cwd=tmp_path, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
            assert server.get("/health").status_code == 200
        assert len(site.access_statuses()) == logged
    assert json.loads(refreshed.read_text())["tutorial"] == first
    app = build_app(fast_settings(data))
    try:
        sources = {r.source for r in app.collection("docs").documents()}
    finally:
        app.close()
    assert site.url("docs/tutorial/controlflow.html") in sources


@pytest.mark.anyio
async def test_serve_mcp_local_mode_refreshes_sources_and_stops_cleanly(tmp_path: Path) -> None:
    refreshed = tmp_path / "data" / "sources" / "refreshed.json"
    with nginx_site(tmp_path, traps=False) as site:
        sources = [{"url": site.url("docs/tutorial/"), "name": "tutorial", "refresh": "1h"}]
        loopback = {"ingest.web.allow_private_networks": ["127.0.0.0/8"], "sources": sources}
        async with local(tmp_path, **loopback) as client:

            async def done() -> bool:
                return refreshed.exists()

            await eventually(done)
            phrase = "differs a bit from what you may be used to in C or Pascal"
            found, _ = await ok(client, "query_knowledge_hub", query=phrase)
        hit = next(h for h in found["hits"] if phrase in " ".join(h["text"].split()))
        assert hit["url"] == site.url("docs/tutorial/controlflow.html#for-statements")
    assert set(json.loads(refreshed.read_text())) == {"tutorial"}
