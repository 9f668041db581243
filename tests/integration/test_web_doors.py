"""A URL reaches the index only through a handle that may write there: the MCP ``ingest``
tool crawls it for a writer, and a read-only caller, or one limited to another collection,
is refused before any request reaches the site (a real nginx on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.caller import Caller
from knowhub.errors import AuthError, KnowhubError
from knowhub.ingest.remote import remote_source
from tests.helpers import fast_settings
from tests.integration.test_mcp_memory import fails, local, ok
from tests.web_site import Site, nginx_site

LOOPBACK = {"ingest.web.allow_private_networks": ["127.0.0.0/8"]}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with nginx_site(tmp_path) as served:
        yield served


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[App]:
    application = build_app(fast_settings(tmp_path / "data", **LOOPBACK))
    yield application
    application.close()


@pytest.mark.anyio
async def test_the_mcp_ingest_tool_crawls_a_url(tmp_path: Path, site: Site) -> None:
    async with local(tmp_path, **LOOPBACK) as client:
        url = site.url("docs/tutorial/controlflow.html")
        report, text = await ok(client, "ingest", path=url, collection="web")
        assert url in report["added"]
        assert report["fetched"]["fetched"] >= 1 and "\npages: " in text
        found, _ = await ok(
            client, "query_knowledge_hub", query="differs a bit from C or Pascal", collection="web"
        )
        assert any(h["url"].startswith(url + "#") for h in found["hits"])
        refused = await fails(client, "ingest", path="http://good@10.0.0.1/", collection="web")
    assert "ingest.web.headers" in refused


@pytest.mark.parametrize(
    "caller",
    [
        Caller("reader", read_only=True),
        Caller("kb-only", collections=frozenset({"kb"})),
    ],
)
def test_a_caller_that_may_not_write_there_is_refused_before_any_request(
    owner: App, site: Site, caller: Caller
) -> None:
    source = remote_source(site.url("docs/tutorial/"), owner.settings)
    assert source is not None
    with pytest.raises((AuthError, KnowhubError)) as refused:
        owner.for_caller(caller).collection("private").ingest_source(source)
    assert "may not" in str(refused.value)  # said as for any collection, existing or not
    assert not (site.logs / "access.log").read_text().strip()  # nothing was asked of the site
