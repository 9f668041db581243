"""Pictures in the web console and the HTTP API: a hit that describes a picture shows it,
its source page shows it whole, and ``/api/chunks/{id}/image`` serves it to a token that may
read the chunk, and to no other. A real server process, a real Chromium; the pictures are
described by OCR (no vision model: the text in a screenshot)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from knowhub import build_app
from knowhub.models import Hit
from tests.console_helpers import screenshots, sign_in
from tests.helpers import fast_settings
from tests.http_helpers import FULL, LIMITED, TOKEN_ENV, ApiServer, api_server
from tests.pictures_helpers import text_png, word_with_figure

SCREEN = text_png("Boiler pressure alarm at 7 bar")
PRIVATE = text_png("Merger codename Orchid closes in May")


@dataclass
class Site:
    server: ApiServer
    picture: Hit  # the chunk describing SCREEN (default collection)
    private: Hit  # the chunk describing PRIVATE (collection "private")
    prose: Hit  # a chunk with no picture


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("pictures")
    word_with_figure(root / "docs" / "boiler.docx", SCREEN)
    word_with_figure(root / "private" / "merger.docx", PRIVATE)
    data = root / "data"
    app = build_app(fast_settings(data))
    try:
        found: dict[str, list[Hit]] = {}
        for folder, collection in (("docs", "default"), ("private", "private")):
            report = app.collection(collection).ingest([root / folder])
            assert not report.failed and not report.warnings, report
            (record,) = app.collection(collection).documents()
            found[collection] = app.collection(record.collection).document_chunks(record)
    finally:
        app.close()

    def picture(hits: list[Hit]) -> Hit:
        (one,) = [h for h in hits if h.metadata.get("image")]
        return one

    prose = next(h for h in found["default"] if not h.metadata.get("image"))
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        yield Site(server, picture(found["default"]), picture(found["private"]), prose)


@pytest.fixture
def page(context: BrowserContext, site: Site) -> Page:
    opened = context.new_page()
    sign_in(opened, site.server.url, FULL, "/ui")
    return opened


def _image_path(hit: Hit) -> str:
    return f"/api/chunks/{quote(hit.chunk_id, safe='')}/image"


def test_a_hit_shows_its_picture_and_its_source_page_shows_it_whole(page: Page, site: Site) -> None:
    page.goto(site.server.url + "/ui/search?q=boiler+pressure+alarm")
    thumbnail = page.locator("#hits .hit").first.locator("img.hit-picture")
    expect(thumbnail).to_be_visible()
    expect(thumbnail).to_have_js_property("naturalWidth", 900)  # the picture, decoded
    assert "Boiler pressure alarm" in (thumbnail.get_attribute("alt") or "")
    page.locator("#hits a.source-link").first.click()
    whole = page.locator("#picture img")
    expect(whole).to_have_js_property("naturalWidth", 900)
    expect(page.locator("#passage mark")).to_contain_text("Boiler pressure alarm")
    screenshots(page, "source-picture", ["#picture img", "#passage mark"])


def test_the_api_serves_the_picture_as_it_was_embedded(site: Site) -> None:
    answer = site.server.get(_image_path(site.picture))
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    assert answer.content == SCREEN
    assert answer.headers["x-content-type-options"] == "nosniff"
    hits = site.server.post("/api/search", json={"query": "boiler pressure alarm"}).json()["hits"]
    assert hits[0]["metadata"]["image"] == site.picture.metadata["image"]


def test_a_picture_is_served_only_to_a_token_that_may_read_its_chunk(site: Site) -> None:
    assert site.server.get(_image_path(site.private)).content == PRIVATE  # full token
    refused = site.server.get(_image_path(site.private), token=LIMITED)
    missing = site.server.get("/api/chunks/0123456789abcdef_0001_deadbeef/image", token=LIMITED)
    assert refused.status_code == missing.status_code == 404
    assert refused.json()["error"].replace(site.private.chunk_id, "X") == missing.json()[
        "error"
    ].replace("0123456789abcdef_0001_deadbeef", "X")
    assert site.server.get(_image_path(site.picture), token=LIMITED).status_code == 200
    assert site.server.get(_image_path(site.prose)).status_code == 404
    console = site.server.get(f"/ui/source/{quote(site.private.chunk_id)}/image", token=LIMITED)
    assert console.status_code == 404
