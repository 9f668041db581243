"""Managing documents in the web console: upload (files, progress per file), delete with a
confirmation, re-ingest; only for tokens that may write, only from the console's own pages.
A real server process, a real Chromium, a real DOCX (python-docx) and PDF (fpdf2)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect

from knowhub import build_app
from tests.console_helpers import WAIT_MS, screenshots, sign_in
from tests.helpers import fast_settings, write
from tests.http_helpers import FULL, OPS, READER, TOKEN_ENV, ApiServer, api_server

LIMIT = 300_000  # server.max_upload_bytes here: under max_body_bytes, so the stream is cut


@dataclass
class Site:
    server: ApiServer
    root: Path
    data: Path

    def url(self, path: str) -> str:
        return self.server.url + path

    @property
    def uploads(self) -> Path:
        return self.data / "uploads" / "default"

    def stored(self) -> list[str]:
        return sorted(p.name for p in self.uploads.iterdir()) if self.uploads.is_dir() else []

    def sources(self, query: str) -> list[str]:
        """What the API's search finds for ``query`` in the default collection."""
        reply = self.server.post("/api/search", FULL, json={"query": query, "top_k": 10})
        assert reply.status_code == 200, reply.text
        return [hit["source"] for hit in reply.json()["hits"]]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("manage")
    write(root / "docs/ops.md", OPS)
    data = root / "data"
    app = build_app(fast_settings(data))
    try:
        app.collection("default").ingest([root / "docs"])
    finally:
        app.close()
    env = {**TOKEN_ENV, "KNOWHUB_SERVER__MAX_UPLOAD_BYTES": str(LIMIT)}
    with api_server(cwd=root, data_dir=data, env=env, token=FULL) as server:
        yield Site(server, root, data)


def _docx(path: Path, text: str) -> Path:
    from docx import Document

    document = Document()
    document.add_heading("Aquarium care", level=1)
    document.add_paragraph(text)
    document.save(str(path))
    return path


def _pdf(path: Path, text: str) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=14)
    pdf.multi_cell(0, 10, text)
    pdf.output(str(path))
    return path


def test_upload_a_docx_and_a_pdf_find_them_then_delete_one(
    context: BrowserContext, site: Site, tmp_path: Path
) -> None:
    docx = _docx(tmp_path / "aquarium care.docx", "The zebrafish tank is cleaned every Tuesday.")
    pdf = _pdf(tmp_path / "observatory.pdf", "The telescope dome opens at dusk in winter.")
    page = context.new_page()
    sign_in(page, site.server.url, FULL, "/ui/upload")
    page.fill("input[name=tags]", "team=lab")
    page.set_input_files("#files", [str(docx), str(pdf)])
    expect(page.locator("#chosen li")).to_have_count(2)
    page.click("#upload-button")
    done = page.locator("#upload-files li[data-state=done]")
    expect(done).to_have_count(2)
    expect(page.locator("#upload-files progress").first).to_have_attribute("value", "1")
    screenshots(page, "upload", ["#dropzone", "#upload-files li", "#upload-done"])
    assert site.stored() == ["aquarium care.docx", "observatory.pdf"]
    assert "aquarium care.docx" in site.sources("zebrafish tank Tuesday")
    metrics = site.server.get("/metrics", FULL).text  # what operators alert on
    added = re.search(r'^knowhub_ingest_documents_total\{result="added"\} (\S+)$', metrics, re.M)
    assert added and float(added.group(1)) >= 2, metrics
    page.goto(site.url("/ui/search?q=telescope+dome&collection=default"))
    expect(page.locator("body")).to_contain_text("observatory.pdf")

    page.goto(site.url("/ui/documents?collection=default"))
    screenshots(page, "documents-manage", ["#documents", "button.delete", "#upload-link"])
    page.click("button[aria-label='Delete aquarium care.docx']")
    expect(page.locator("h1")).to_contain_text("Delete aquarium care.docx?")
    screenshots(page, "confirm-delete", ["#confirm-delete button"])
    page.click("#confirm-delete button")
    expect(page.locator("#managed")).to_contain_text("Removed aquarium care.docx from default")
    assert "aquarium care.docx" not in site.sources("zebrafish tank Tuesday")
    assert site.stored() == ["observatory.pdf"]  # the upload's file went with it
    page.goto(site.url("/ui/documents?collection=default"))
    expect(page.locator("#documents")).not_to_contain_text("aquarium care.docx")

    page.click("#documents a:has-text('observatory.pdf')")
    page.click("#reingest")
    expect(page.locator("#managed")).to_contain_text("observatory.pdf: unchanged")


def test_oversized_and_unsupported_files_get_their_reasons_and_nothing_is_stored(
    context: BrowserContext, site: Site, tmp_path: Path
) -> None:
    big = write(tmp_path / "huge.md", "# Big\n\n" + "lorem ipsum " * (LIMIT // 10))
    exe = tmp_path / "setup.exe"
    exe.write_bytes(b"MZ\x90\x00 not a document")
    before = site.stored()
    page = context.new_page()
    sign_in(page, site.server.url, FULL, "/ui/upload")
    page.set_input_files("#files", [str(big), str(exe)])
    page.click("#upload-button")
    failed = page.locator("#upload-files li[data-state=failed]")
    expect(failed).to_have_count(2)
    expect(failed.filter(has_text="huge.md")).to_contain_text("server.max_upload_bytes")
    expect(failed.filter(has_text="setup.exe")).to_contain_text(".exe files are not accepted")
    expect(page.locator("#upload-summary")).to_have_text(
        "nothing ingested: 2 files sent, none went in (by type: .exe 1, .md 1)"
    )
    assert site.stored() == before
    screenshots(page, "upload-refused", ["#upload-files li.failed .reason"])


def test_without_javascript_the_form_posts_and_shows_the_result(
    browser_context_no_js: BrowserContext, site: Site, tmp_path: Path
) -> None:
    note = write(tmp_path / "..note.md", "# Kiln\n\nThe pottery kiln fires at 1200 degrees.")
    page = browser_context_no_js.new_page()
    sign_in(page, site.server.url, FULL, "/ui/upload")
    page.fill("input[name=new_collection]", "crafts")
    page.set_input_files("#files", [str(note)])
    page.click("#upload-button")
    expect(page.locator("#upload-progress li[data-state=done]")).to_contain_text("..note.md")
    stored = sorted(p.name for p in (site.data / "uploads" / "crafts").iterdir())
    assert stored == ["note.md"]  # no leading dots: the name is sanitised
    reply = site.server.post("/api/search", FULL, json={"query": "kiln", "collection": "crafts"})
    assert [h["source"] for h in reply.json()["hits"]] == ["note.md"]


@pytest.fixture
def browser_context_no_js(context: BrowserContext) -> Iterator[BrowserContext]:
    assert context.browser is not None
    opened = context.browser.new_context(java_script_enabled=False)
    opened.set_default_timeout(WAIT_MS)
    yield opened
    opened.close()


def test_a_read_only_token_sees_no_controls_and_gets_403(
    context: BrowserContext, site: Site
) -> None:
    page = context.new_page()
    sign_in(page, site.server.url, READER, "/ui/documents")
    expect(page.locator("#documents")).to_contain_text("ops.md")
    expect(page.locator("nav")).not_to_contain_text("Upload")
    expect(page.locator("button.delete")).to_have_count(0)
    expect(page.locator("#upload-link")).to_have_count(0)
    page.click("#documents a:has-text('ops.md')")
    expect(page.locator("#document-facts")).to_be_visible()
    expect(page.locator("#manage-document")).to_have_count(0)
    doc_hash = page.locator("#document-facts dd.mono").nth(1).inner_text()
    assert page.goto(site.url("/ui/upload")).status == 403  # type: ignore[union-attr]
    origin = {"Origin": site.server.url}
    for path, form in [
        (f"/ui/documents/{doc_hash}/delete", {"collection": "default", "confirm": "yes"}),
        (f"/ui/documents/{doc_hash}/reingest", {"collection": "default"}),
        ("/ui/faq/remove", {"collection": "default", "source": "faq.csv"}),
    ]:
        reply = page.request.post(site.url(path), form=form, headers=origin)
        assert reply.status == 403, reply.text()
        assert "read-only" in reply.text()
    files = {"files": {"name": "x.md", "mimeType": "text/markdown", "buffer": b"# X\n\nx\n"}}
    for path in ("/ui/upload", "/ui/faq/import"):
        reply = page.request.post(site.url(path), multipart=files, headers=origin)
        assert reply.status == 403, reply.text()
    assert "ops.md" in site.sources("backups")  # still there


def test_a_cross_site_post_is_refused(site: Site) -> None:
    doc_hash = next(
        d["doc_hash"] for d in site.server.get("/api/documents", FULL).json()["documents"]
    )
    before = site.stored()
    for origin in ("http://localhost:1", None):  # another origin the guard allows; no origin
        headers = {"Origin": origin} if origin else {}
        upload = site.server.post(
            "/ui/upload", FULL, headers=headers, files={"files": ("forged.md", b"# F\n\nf\n")}
        )
        assert upload.status_code == 403, upload.text
        assert "accepted from the console" in upload.text
        delete = site.server.post(
            f"/ui/documents/{doc_hash}/delete",
            FULL,
            headers=headers,
            data={"collection": "default", "confirm": "yes"},
        )
        assert delete.status_code == 403, delete.text
    assert site.stored() == before
    assert "ops.md" in site.sources("backups")


def test_a_forged_form_on_another_site_is_refused_in_the_browser(
    context: BrowserContext, site: Site
) -> None:
    """A signed-in browser opens a page of another origin that posts to the console."""
    page = context.new_page()
    sign_in(page, site.server.url, FULL, "/ui/documents")
    doc_hash = next(
        d["doc_hash"] for d in site.server.get("/api/documents", FULL).json()["documents"]
    )
    forged = (
        f'<form method="post" action="{site.url(f"/ui/documents/{doc_hash}/delete")}">'
        '<input type="hidden" name="collection" value="default">'
        '<input type="hidden" name="confirm" value="yes"><button>win a prize</button></form>'
    )
    page.route(
        "http://localhost:1/**", lambda route: route.fulfill(body=forged, content_type="text/html")
    )
    page.goto("http://localhost:1/prize")
    with page.expect_response(lambda r: "/delete" in r.url) as answer:
        page.click("button")
    # SameSite=Strict: the browser withholds the session cookie from another site's post.
    assert answer.value.status in (401, 403)
    assert "ops.md" in site.sources("backups")  # not deleted


def test_faq_entries_are_imported_listed_and_removed(
    context: BrowserContext, site: Site, tmp_path: Path
) -> None:
    faq = write(
        tmp_path / "faq.csv",
        "question,answer\nHow do I reset my password?,Use the self-service portal.\n"
        "Where is the VPN guide?,On the intranet under IT.\n",
    )
    page = context.new_page()
    sign_in(page, site.server.url, FULL, "/ui/faq")
    expect(page.locator("#faq-empty")).to_be_visible()
    page.set_input_files("#faq-import input[type=file]", [str(faq)])
    page.click("#faq-import button")
    expect(page.locator("[role=status]")).to_contain_text("faq.csv: 2 entries imported")
    expect(page.locator("#faq")).to_contain_text("How do I reset my password?")
    screenshots(page, "faq", ["#faq", "#faq-import"])
    kept = site.data / "uploads" / "default" / "faq" / "faq.csv"
    assert kept.is_file()

    reader = context.browser.new_context() if context.browser else None
    assert reader is not None
    other = reader.new_page()
    sign_in(other, site.server.url, READER, "/ui/faq")
    expect(other.locator("#faq")).to_contain_text("Where is the VPN guide?")
    expect(other.locator("#faq-import")).to_have_count(0)
    expect(other.locator("button.faq-remove")).to_have_count(0)
    reader.close()

    page.click("button.faq-remove")
    expect(page.locator("[role=status]")).to_contain_text("2 entries removed")
    expect(page.locator("#faq-empty")).to_be_visible()
    assert not kept.exists()


def test_bad_tags_refuse_the_upload_with_the_fix_and_keep_nothing(
    context: BrowserContext, site: Site, tmp_path: Path
) -> None:
    note = write(tmp_path / "tagged.md", "# Tagged\n\nSome text.\n")
    before = site.stored()
    page = context.new_page()
    sign_in(page, site.server.url, FULL, "/ui/upload")
    page.fill("input[name=tags]", "team")
    page.set_input_files("#files", [str(note)])
    page.click("#upload-button")
    expect(page.locator("#upload-error")).to_contain_text("upload refused (400)")
    expect(page.locator("#upload-error")).to_contain_text("is not key=value")
    assert site.stored() == before
