"""The MCP ``ingest`` tool says what it did not ingest: each file with its reason, a count by
type, and a note when nothing went in (through the SDK's in-memory client)."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from tests.helpers import write
from tests.integration.test_mcp_memory import local, ok
from tests.mcp_helpers import text_of

pytestmark = pytest.mark.anyio


async def test_the_ingest_tool_lists_what_it_skipped_by_file_and_type(tmp_path: Path) -> None:
    async with local(tmp_path) as client:
        pics = tmp_path / "docs" / "pics"
        for name in ("a.gif", "b.gif"):
            write(pics / name, "GIF89a")
        write(pics / "style.css", "body {}\n")
        (pics / "tar.1.gz").write_bytes(gzip.compress(b".TH TAR 1\n.SH NAME\ntar\n"))
        report, text = await ok(client, "ingest", path="pics")
    assert report["skipped_by_type"] == {".gif": 2, ".1.gz": 1, ".css": 1}
    assert [s["source"] for s in report["skipped"]] == [
        "a.gif",
        "b.gif",
        "style.css",
        "tar.1.gz",
    ]
    assert report["note"] == "nothing ingested: 4 files found, none of a type knowhub reads"
    lines = text.splitlines()
    assert "- skipped a.gif: unsupported file type .gif" in lines
    assert any(line.startswith("- skipped tar.1.gz: a manual page's roff source") for line in lines)
    assert "skipped by type: .gif 2, .1.gz 1, .css 1" in lines
    assert lines[-1] == report["note"]


async def test_a_sync_logs_the_files_of_unread_types_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A served folder of pictures must not fill the log with a line per file at each sync.
    for index in range(30):
        write(tmp_path / "docs" / "pics" / f"{index}.gif", "GIF89a")
    with caplog.at_level(logging.INFO, logger="knowhub"):
        async with local(tmp_path):
            pass
    said = [r.getMessage() for r in caplog.records if ".gif" in r.getMessage()]
    docs = tmp_path / "docs"
    assert said == [f"{docs}: skipped 30 files of types knowhub does not read: .gif 30"]


async def test_the_ingest_tool_names_five_of_a_type_and_fits_its_result_budget(
    tmp_path: Path,
) -> None:
    budget = 2000
    async with local(tmp_path, **{"server.max_result_chars": budget}) as client:
        for index in range(12):
            write(tmp_path / "docs" / "code" / f"s{index:02d}.py", "print()\n")
        report, text = await ok(client, "ingest", path="code")
        assert [s["source"] for s in report["skipped"]] == [f"s{i:02d}.py" for i in range(5)]
        assert report["skipped_by_type"] == {".py": 12} and not report["truncated"]
        assert "- … and 7 more .py" in text.splitlines()

        for index in range(60):  # a type each: five of a type do not bound these
            write(tmp_path / "docs" / "odd" / f"file{index:02d}.x{index:02d}", "data\n")
        result = await client.call_tool("ingest", {"path": "odd"})
    text, report = text_of(result), result.structured_content
    assert not result.is_error and report is not None
    assert len(text) <= budget and len(json.dumps(report)) <= budget
    assert text.endswith("\n… (cut to fit server.max_result_chars: the counts are whole)")
    assert report["counts"]["skipped"] == len(report["skipped_by_type"]) == 60
    assert report["truncated"] and 0 < len(report["skipped"]) < 60


async def test_a_sync_logs_a_few_compressed_copies_and_counts_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # nginx's gzip_static folder: a copy beside each page, skipped at every sync.
    for index in range(30):
        write(tmp_path / "docs" / "site" / f"p{index:02d}.html", "<h1>Page</h1>\n")
        write(tmp_path / "docs" / "site" / f"p{index:02d}.html.gz", "")
    with caplog.at_level(logging.INFO, logger="knowhub"):
        async with local(tmp_path):
            pass
    said = [r.getMessage() for r in caplog.records if ".html.gz" in r.getMessage()]
    assert said == [
        *(
            f"skipped site/p{i:02d}.html.gz: a compressed copy of p{i:02d}.html, beside it"
            for i in range(5)
        ),
        "skipped 25 more: .html.gz 25",
    ]
