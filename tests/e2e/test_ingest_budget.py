"""`knowhub ingest` on a folder holding files built to stall it: a page nested 200,000 deep
and a scan of more pages than OCR may read fail alone, each with its reason, while the good
file is indexed; `knowhub ingest --failed` lists them, and later runs pass them over until
the file or the settings change (the issue's scenario, with a small page limit so that the
test's scan is short)."""

from __future__ import annotations

import io
import os
from pathlib import Path

from tests.helpers import knowhub, write
from tests.scans import scanned_page

EN = "Nightly backups of the billing database are kept for 35 days in two regions."
RU = "Ноутбуки зашифрованы ключом, который хранится в отделе ИТ."


def _tiff(path: Path) -> Path:
    pages = [scanned_page(EN, "en", 1), scanned_page(RU, "ru", 2)]
    buffer = io.BytesIO()
    pages[0].save(buffer, "TIFF", save_all=True, append_images=pages[1:], compression="tiff_lzw")
    path.write_bytes(buffer.getvalue())
    return path


def _failures(stdout: str) -> dict[str, str]:
    """``failed SOURCE: REASON`` lines of a report, by source."""
    lines = [line.strip().removeprefix("failed ") for line in stdout.splitlines()]
    return dict(line.split(": ", 1) for line in lines if line.startswith(("deep", "fax")))


def test_files_over_their_budget_fail_alone_and_wait_in_the_failed_list(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "good.md", "# Backups\n\nBackups run nightly and are kept for 35 days.\n")
    deep = write(docs / "deep.html", "<div>" * 200_000 + "Deep." + "</div>" * 200_000)
    scan = _tiff(docs / "fax.tif")
    one_page = {"KNOWHUB_INGEST__OCR_MAX_PAGES": "1"}

    first = knowhub("ingest", "docs", cwd=tmp_path, env=one_page)
    assert first.returncode == 1
    assert "1 added" in first.stdout and "2 failed" in first.stdout, first.stdout
    reasons = {
        "deep.html": f"{deep}: nests elements more than 512 deep (at line 1): no page meant for "
        "reading nests so deep (browsers stop nesting at 512); close its elements, or convert "
        "it to text",
        "fax.tif": f"{scan}: has 2 pages to read by OCR, over ingest.ocr_max_pages (1): split "
        "it, or raise the limit (0: none)",
    }
    assert _failures(first.stdout) == reasons

    listed = knowhub("ingest", "--failed", cwd=tmp_path, env=one_page)
    assert listed.returncode == 0, listed.stderr
    assert [line.split(" (failed ")[0] for line in listed.stdout.splitlines()] == [
        "deep.html",
        "fax.tif",
    ]
    assert all(reason in listed.stdout for reason in reasons.values())

    again = knowhub("ingest", "docs", cwd=tmp_path, env=one_page)
    assert "0 added" in again.stdout and "1 unchanged" in again.stdout, again.stdout
    for source, reason in _failures(again.stdout).items():
        assert reason.startswith("skipped as previously failed (")
        assert reason.endswith(reasons[source])

    touched = deep.stat().st_mtime_ns + 1_000_000_000
    os.utime(deep, ns=(touched, touched))  # a changed file is read again (and fails again)
    third = _failures(knowhub("ingest", "docs", cwd=tmp_path, env=one_page).stdout)
    assert third["deep.html"] == reasons["deep.html"]
    assert third["fax.tif"].startswith("skipped as previously failed (")

    # Other settings: both are read again, and the scan, within the new limit, is indexed.
    fourth = knowhub("ingest", "docs", cwd=tmp_path, env={"KNOWHUB_INGEST__OCR_MAX_PAGES": "2"})
    assert "1 added" in fourth.stdout, fourth.stdout
    assert _failures(fourth.stdout) == {"deep.html": reasons["deep.html"]}
    listed = knowhub("ingest", "--failed", cwd=tmp_path)
    assert [line.split(" (failed ")[0] for line in listed.stdout.splitlines()] == ["deep.html"]
