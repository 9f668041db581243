"""A zip uploaded through the console goes through the same pipeline as a folder's: each
member a document, cited inside the archive, its passage shown by the source view and its
original served from the archive (the real
app in process, through its guard and handlers; the zip written by Python's zipfile)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from knowhub import load_settings
from knowhub.interfaces.http import create_app
from tests.mcp_helpers import wait_until

FROM_PAGE = {"Sec-Fetch-Site": "same-origin"}  # what the console's own pages send


def _bundle() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("docs/kiln.md", "# Kiln\n\nThe kiln fires at 1200 degrees.\n")
        archive.writestr("docs/glaze.md", "# Glaze\n\nCeladon glaze needs a reducing fire.\n")
    return out.getvalue()


def test_an_uploaded_zip_is_ingested_member_by_member_and_cited(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = load_settings(
        overrides={"data_dir": data, "embedder.provider": "hashing", "embedder.workers": 1},
        cwd=tmp_path,
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        started = client.post(
            "/ui/upload",
            data={"collection": "default"},
            files=[("files", ("bundle.zip", _bundle(), "application/zip"))],
            headers={**FROM_PAGE, "Accept": "application/json"},
        )
        assert started.status_code == 202, started.text

        def ended() -> dict[str, Any] | None:
            view: dict[str, Any] = client.get(started.json()["url"]).json()
            return view if view["finished"] else None

        view = wait_until(ended, timeout=60, interval=0.05)
        assert [(f["name"], f["state"]) for f in view["files"]] == [("bundle.zip", "done")], view
        hits = client.post("/api/search", json={"query": "celadon glaze", "top_k": 1}).json()
        assert hits["hits"][0]["source"] == "bundle.zip!/docs/glaze.md"
        shown = client.get(
            f"/ui/source/{hits['hits'][0]['chunk_id']}", params={"collection": "default"}
        )
        assert shown.status_code == 200 and "reducing fire" in shown.text
        doc_hash = hits["hits"][0]["doc_hash"]
        original = client.get(f"/ui/documents/{doc_hash}/file", params={"collection": "default"})
        assert original.status_code == 200, original.text
        assert original.content == b"# Glaze\n\nCeladon glaze needs a reducing fire.\n"
        assert 'filename="glaze.md"' in original.headers["content-disposition"]
