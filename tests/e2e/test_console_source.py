"""Reading the source in the web console: a citation or a search hit opens the chunk inside
its document, the cited span marked, a PDF's page as an image, the original file to
download. A real server process, a real Chromium, real PDFs built at test time."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from knowhub import build_app
from knowhub.models import Hit
from tests.console_helpers import screenshots, sign_in
from tests.helpers import fast_settings, write
from tests.http_helpers import FULL, LIMITED, MINUTES, TOKEN_ENV, ApiServer, api_server
from tests.scans import scanned_page

SECTIONS = [
    ("Intro", "The handbook starts with the mission of the team."),
    ("Onboarding", "New staff receive a laptop on the first day."),
    ("Backups", "Database backups run every 6 hours and are kept for 35 days."),
    ("Restores", "A restore is rehearsed every quarter by the on-call engineer."),
    ("Access", "Use the VPN for the console; tokens rotate monthly."),
    ("Offboarding", "Leavers return hardware within a week."),
    ("Glossary", "RPO means recovery point objective."),
]
HANDBOOK = "# Handbook\n\n" + "".join(f"## {title}\n\n{body}\n\n" for title, body in SECTIONS)
PDF_PAGES = [
    "Quarterly report. Revenue grew in every region.",
    "Спутниковая связь: the satellite uplink costs 40 euros per month.",
    "Appendix with the glossary of terms.",
]


MANUAL_PAGES = ["Compressed manual.", "The pump needs twelve bar of pressure to start."]


@dataclass
class Site:
    server: ApiServer
    root: Path
    data: Path
    chunks: dict[str, list[Hit]]  # by source: the chunks of each document, in order

    def url(self, path: str) -> str:
        return self.server.url + path

    def chunk(self, source: str, containing: str) -> Hit:
        return next(h for h in self.chunks[source] if containing in h.text)


def _pdf(pages: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    font = _unicode_font()
    pdf.add_font("body", fname=str(font))
    pdf.set_font("body", size=14)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())


def _png(text: str) -> bytes:
    buffer = io.BytesIO()
    scanned_page(text, "eng").save(buffer, "PNG")
    return buffer.getvalue()


def _unicode_font() -> Path:
    for candidate in (
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
    ):
        if Path(candidate).is_file():
            return Path(candidate)
    pytest.fail("no DejaVuSans.ttf: install fonts-dejavu-core (make test installs it)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("source")
    write(root / "docs/handbook.md", HANDBOOK)
    (root / "docs/report.pdf").write_bytes(_pdf(PDF_PAGES))
    write(root / "docs/备份.md", "# 备份\n\n数据库每六小时备份一次，保留三十五天。\n")
    write(root / "docs/changing.md", "# Changing\n\nThe price is 10 euros.\n")
    write(root / "docs/vanishing.md", "# Vanishing\n\nThis file will be deleted.\n")
    (root / "docs/lost.pdf").write_bytes(_pdf(["This PDF is deleted after it is indexed."]))
    (root / "docs/manual.pdf.gz").write_bytes(gzip.compress(_pdf(MANUAL_PAGES)))
    (root / "docs/scan.png.gz").write_bytes(gzip.compress(_png("The boiler needs service.")))
    write(root / "private/minutes.md", MINUTES)
    data = root / "data"
    app = build_app(fast_settings(data))
    try:
        for folder, collection in (("docs", "default"), ("private", "private")):
            report = app.collection(collection).ingest([root / folder])
            assert not report.failed, report.failed
        chunks = {
            r.source: app.collection(r.collection).document_chunks(r)
            for name in ("default", "private")
            for r in app.collection(name).documents()
        }
    finally:
        app.close()
    write(root / "docs/changing.md", "# Changing\n\nThe price is 99 euros.\n")  # not re-ingested
    (root / "docs/vanishing.md").unlink()
    (root / "docs/lost.pdf").unlink()
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        yield Site(server, root, data, chunks)


@pytest.fixture
def page(context: BrowserContext, site: Site) -> Page:
    opened = context.new_page()
    sign_in(opened, site.server.url, FULL, "/ui")
    return opened


def _source_path(hit: Hit) -> str:
    return f"/ui/source/{quote(hit.chunk_id, safe='')}"


def test_a_search_hit_opens_its_passage_with_the_span_marked(page: Page, site: Site) -> None:
    page.goto(site.url("/ui/search?q=database+backups+hours"))
    page.locator("#hits a.source-link").first.click()
    cited = site.chunk("handbook.md", "Database backups")
    expect(page).to_have_url(site.url(_source_path(cited) + "?collection=default"))
    expect(page.locator("#source-title")).to_have_text("Handbook")
    expect(page.locator("#source-facts")).to_contain_text("markdown")
    marked = page.locator("#passage mark")
    expect(marked).to_have_count(1)
    assert marked.inner_text() == cited.text
    passage = page.locator("#passage")
    for shown in ("New staff receive", "rehearsed every quarter", "tokens rotate"):
        expect(passage).to_contain_text(shown)  # two neighbours either side
    expect(passage).not_to_contain_text("Leavers return")  # the third after: not shown
    expect(passage.locator(".src-heading", has_text="§ Handbook > Backups")).to_be_visible()
    expect(page.locator("#page-image")).to_have_count(0)  # no pages in Markdown
    screenshots(page, "source-markdown", ["#source-title", "#passage mark", "#download"])


def test_more_context_widens_the_passage(page: Page, site: Site) -> None:
    cited = site.chunk("handbook.md", "Database backups")
    page.goto(site.url(_source_path(cited)))
    page.click("#more-context")
    expect(page.locator("#passage")).to_contain_text("Leavers return")
    expect(page.locator("#passage mark")).to_have_text(cited.text)


def test_a_pdf_citation_shows_its_page_image(page: Page, site: Site) -> None:
    cited = site.chunk("report.pdf", "satellite uplink")
    assert cited.page == 2
    page.goto(site.url(_source_path(cited)))
    image = page.locator("#page-image img")
    expect(image).to_be_visible()
    page.wait_for_function("document.querySelector('#page-image img').naturalWidth > 0")
    width = page.evaluate("document.querySelector('#page-image img').naturalWidth")
    assert 600 <= width <= 1200
    expect(page.locator("#passage mark")).to_contain_text("Спутниковая связь")
    expect(page.locator("#source-facts")).to_contain_text("2 of 3")
    boxes = page.locator("#page-image .src-box")  # the cited line, marked on the image
    expect(boxes).to_have_count(1)
    sheet = page.locator("#page-image img").bounding_box()
    first = boxes.first.bounding_box()
    assert sheet and first
    assert sheet["x"] <= first["x"] < sheet["x"] + sheet["width"] / 4  # at the left margin
    assert sheet["y"] <= first["y"] < sheet["y"] + sheet["height"] / 3  # near the top
    assert sheet["width"] / 2 < first["width"] < sheet["width"]  # one long printed line
    expect(page.locator("#page-image figcaption")).to_contain_text("the cited lines marked")
    cached = list((site.data / "cache" / "pages").glob(f"{cited.doc_hash}-p2.png"))
    assert len(cached) == 1
    screenshots(page, "source-pdf", ["#page-image img", "#passage mark"])


def test_the_page_image_is_a_real_png_cached_once(site: Site) -> None:
    cited = site.chunk("report.pdf", "Appendix")
    answer = site.server.get(_source_path(cited) + "/page.png")
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    body = answer.content
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(body[16:20]), int.from_bytes(body[20:24])
    assert 600 <= width <= 1200 and height > width  # A4, portrait
    cached = site.data / "cache" / "pages" / f"{cited.doc_hash}-p3.png"
    assert cached.read_bytes() == body
    assert site.server.get(_source_path(cited) + "/page.png").content == body


def test_a_markdown_chunk_has_no_page_image(site: Site) -> None:
    cited = site.chunk("handbook.md", "Database backups")
    assert site.server.get(_source_path(cited) + "/page.png").status_code == 404


def test_a_limited_token_cannot_reach_another_collection(site: Site) -> None:
    secret = site.chunks["minutes.md"][0]
    record_path = f"/ui/documents/{secret.doc_hash}/file?collection=private"
    for path in (_source_path(secret), _source_path(secret) + "/page.png", record_path):
        refused = site.server.get(path, LIMITED)
        assert refused.status_code == 404, path
        assert "orchid" not in refused.text
    missing = site.server.get("/ui/source/0000000000000000_0000_00000000", LIMITED)
    assert missing.status_code == 404  # missing and forbidden look alike
    assert site.server.get(_source_path(secret), FULL).status_code == 200


def test_the_original_file_downloads_with_its_bytes(page: Page, site: Site) -> None:
    cited = site.chunk("report.pdf", "Quarterly")
    page.goto(site.url(_source_path(cited)))
    with page.expect_download() as download:
        page.click("#download")
    assert download.value.suggested_filename == "report.pdf"
    saved = Path(download.value.path())
    assert saved.read_bytes() == (site.root / "docs/report.pdf").read_bytes()
    answer = site.server.get(f"/ui/documents/{cited.doc_hash}/file")
    assert answer.headers["content-disposition"].startswith('attachment; filename="report.pdf"')
    assert answer.headers["content-type"] == "application/pdf"


def test_a_compressed_pdf_shows_its_page_with_the_cited_lines_marked(site: Site) -> None:
    # The page image was a 400 "not a readable PDF" and the marks were silently missing:
    # pdfium was given the gzip bytes.
    cited = site.chunk("manual.pdf.gz", "pump")
    image = site.server.get(_source_path(cited) + "/page.png")
    assert image.status_code == 200, image.text
    assert image.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert 'class="src-box"' in site.server.get(_source_path(cited)).text


@pytest.mark.parametrize("name", ["manual.pdf.gz", "scan.png.gz"])
def test_a_compressed_file_downloads_as_the_gzip_it_is(site: Site, name: str) -> None:
    # It went out as application/pdf (image/png): a browser would open gzip bytes as one.
    record = site.chunks[name][0]
    answer = site.server.get(f"/ui/documents/{record.doc_hash}/file")
    assert answer.headers["content-type"] == "application/gzip"
    assert answer.content == (site.root / "docs" / name).read_bytes()


def test_a_changed_file_is_refused(site: Site) -> None:
    changed = site.chunks["changing.md"][0]
    answer = site.server.get(f"/ui/documents/{changed.doc_hash}/file?collection=default")
    assert answer.status_code == 409
    assert "has changed since it was indexed" in answer.text and "re-ingest" in answer.text
    assert "99 euros" not in answer.text


def test_a_gone_file_says_so_and_its_passage_still_shows(page: Page, site: Site) -> None:
    gone = site.chunks["vanishing.md"][0]
    answer = site.server.get(f"/ui/documents/{gone.doc_hash}/file")
    assert answer.status_code == 410 and "is gone" in answer.text
    page.goto(site.url(_source_path(gone)))
    expect(page.locator("#passage mark")).to_contain_text("This file will be deleted.")


def test_a_gone_pdf_shows_a_placeholder_for_its_page(page: Page, site: Site) -> None:
    gone = site.chunks["lost.pdf"][0]
    page.goto(site.url(_source_path(gone)))
    expect(page.locator("#page-image [role=note]")).to_contain_text("is gone")
    expect(page.locator("#page-image img")).to_have_count(0)
    expect(page.locator("#passage mark")).to_contain_text("deleted after it is indexed")
    assert site.server.get(_source_path(gone) + "/page.png").status_code == 410


def test_chinese_text_is_marked_and_tagged_with_its_language(page: Page, site: Site) -> None:
    cited = site.chunk("备份.md", "数据库")
    page.goto(site.url(_source_path(cited) + "?around=abc"))  # a bad count: the default
    expect(page.locator("#passage mark")).to_have_text(cited.text)
    expect(page.locator("#passage [lang=zh]")).to_have_count(1)
    expect(page.locator("#source-title")).to_have_text("备份")
    answer = site.server.get(f"/ui/documents/{cited.doc_hash}/file")
    assert answer.content.decode() == (site.root / "docs/备份.md").read_text(encoding="utf-8")
    assert "filename*=UTF-8''%E5%A4%87%E4%BB%BD.md" in answer.headers["content-disposition"]
    assert _drawn_apart(page, "备", "份"), (
        "Chinese characters render as the same empty box: install a CJK font "
        "(Debian: fonts-wqy-microhei or fonts-noto-cjk)"
    )
    screenshots(page, "source-chinese", ["#passage mark"])


def _drawn_apart(page: Page, first: str, second: str) -> bool:
    """Whether two characters come out as different pixels in the passage's font: a
    missing font draws every character as the same box (tofu)."""
    script = """([a, b]) => {
        const font = getComputedStyle(document.querySelector('#passage')).font;
        const draw = (ch) => {
            const canvas = document.createElement('canvas');
            canvas.width = canvas.height = 40;
            const ctx = canvas.getContext('2d');
            ctx.font = font;
            ctx.fillText(ch, 4, 30);
            return Array.from(ctx.getImageData(0, 0, 40, 40).data).join(',');
        };
        return draw(a) !== draw(b);
    }"""
    return bool(page.evaluate(script, [first, second]))


def test_a_chunk_page_links_to_its_source(page: Page, site: Site) -> None:
    cited = site.chunk("handbook.md", "rehearsed")
    page.goto(site.url(f"/ui/chunks/{cited.chunk_id}"))
    page.click("a.source-link")
    expect(page.locator("#passage mark")).to_have_text(cited.text)
