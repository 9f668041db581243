"""The console's source view of an HTML document draws the headings and tables its loader
wrote as Markdown (no ``##`` or ``|---|`` on the page), escaped; a Markdown file's own
``##`` stay as written."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from knowhub import build_app
from knowhub.interfaces.http import create_app
from tests.helpers import fast_settings, write

HTML = """<html><head><title>Travel</title></head><body><h1>Travel policy</h1>
<h2>Rates</h2><table><tr><th>City</th><th>Nightly rate</th></tr>
<tr><td>Paris</td><td>200 euro</td></tr><tr><td>&lt;script&gt;Oslo</td><td>250 euro</td></tr>
</table></body></html>"""
MARKDOWN = "# Kiln\n\n## Firing\n\nThe kiln fires at 1200 degrees.\n"


def _page(client: TestClient, query: str) -> str:
    hits = client.post("/api/search", json={"query": query, "top_k": 1}).json()["hits"]
    shown = client.get(f"/ui/source/{hits[0]['chunk_id']}", params={"collection": "default"})
    assert shown.status_code == 200, shown.text
    passage = shown.text.split('id="passage"', 1)[1].split("</article>", 1)[0]
    return passage.replace("<mark>", "").replace("</mark>", "")  # the cited span: all of it


def test_an_html_source_shows_its_headings_and_tables_drawn_not_as_markdown(
    tmp_path: Path,
) -> None:
    docs, data = tmp_path / "docs", tmp_path / "data"
    write(docs / "travel.html", HTML)
    write(docs / "kiln.md", MARKDOWN)
    app = build_app(fast_settings(data))
    try:
        assert not app.collection("default").ingest([docs]).failed
    finally:
        app.close()
    with TestClient(create_app(fast_settings(data)), base_url="http://127.0.0.1") as client:
        html = _page(client, "Paris nightly rate")
        markdown = _page(client, "kiln fires")
    assert '<span class="src-h src-h2">Rates</span>' in html
    assert '<span class="src-cell">Paris</span><span class="src-cell">200 euro</span>' in html
    assert "##" not in html and "---" not in html and "| Paris" not in html
    assert "&lt;script&gt;Oslo" in html and "<script>Oslo" not in html
    assert "## Firing" in markdown  # the file's own text, as written and cited by line
