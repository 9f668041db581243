"""`knowhub ingest` says what it did not ingest: each file with its reason, a count by type,
and a line when nothing at all went in. Unsupported types are no failure (exit 0); a file
named on the command line that cannot be read is one (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import READ_FORMATS, load
from tests.helpers import knowhub, write


def _folder(docs: Path) -> Path:
    write(docs / "style.css", "body { color: red }\n")
    (docs / "logo.gif").write_bytes(b"GIF89a\x01\x00\x01\x00")
    (docs / "src.rar").write_bytes(b"Rar!\x1a\x07")  # skipped by its name, never opened
    return docs


def test_a_folder_of_unread_types_is_listed_by_file_and_type_and_exits_0(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path / "docs"), str(tmp_path / "data")
    result = knowhub("--data-dir", data, "ingest", str(docs), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "0 failed, 3 skipped (" in lines[0]
    assert lines[1:4] == [
        "  skipped logo.gif: unsupported file type .gif",
        "  skipped src.rar: unsupported file type .rar",
        "  skipped style.css: unsupported file type .css",
    ]
    assert lines[4] == "  skipped by type: .css 1, .gif 1, .rar 1"
    assert lines[5].startswith("  knowhub reads .bmp .csv .docx ")
    assert lines[-1] == "nothing ingested: 3 files found, none of a type knowhub reads"

    result = knowhub("--data-dir", data, "ingest", str(docs), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["skipped_by_type"] == {".css": 1, ".gif": 1, ".rar": 1}
    assert [s["source"] for s in report["skipped"]] == ["logo.gif", "src.rar", "style.css"]


def test_a_file_of_an_unread_type_named_on_the_command_line_fails(tmp_path: Path) -> None:
    docs = _folder(tmp_path / "docs")
    result = knowhub(
        "--data-dir", str(tmp_path / "data"), "ingest", str(docs / "style.css"), cwd=tmp_path
    )
    assert result.returncode == 1, result.stdout
    assert "  failed style.css: style.css: unsupported file type .css; knowhub reads " in (
        result.stdout
    )
    assert result.stdout.splitlines()[-1] == (
        "nothing ingested: 1 file found, each skipped or failed (with its reason)"
    )


def test_many_files_of_one_type_are_named_five_and_counted(tmp_path: Path) -> None:
    # /usr/share/doc printed 20,000 lines; --json still lists every file.
    docs, data = tmp_path / "docs", str(tmp_path / "data")
    for index in range(12):
        write(docs / f"s{index:02d}.py", "print()\n")
    write(docs / "style.css", "body {}\n")
    result = knowhub("--data-dir", data, "ingest", str(docs), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1:8] == [
        *(f"  skipped s{i:02d}.py: unsupported file type .py" for i in range(5)),
        "  skipped style.css: unsupported file type .css",
        "  … and 7 more .py (--json lists every file)",
    ]
    assert lines[8] == "  skipped by type: .py 12, .css 1"
    result = knowhub("--data-dir", data, "ingest", str(docs), "--json", cwd=tmp_path)
    assert len(json.loads(result.stdout)["skipped"]) == 13


def test_what_knowhub_reads_is_said_alike_everywhere(tmp_path: Path) -> None:
    docs, data = _folder(tmp_path / "docs"), str(tmp_path / "data")
    listed = knowhub("--data-dir", data, "ingest", str(docs), cwd=tmp_path).stdout
    named = knowhub("--data-dir", data, "ingest", str(docs / "style.css"), cwd=tmp_path).stdout
    with pytest.raises(LoaderError) as loaded:
        load(docs / "style.css")
    for said in (listed, named, str(loaded.value)):
        assert f"knowhub reads {READ_FORMATS}" in said
