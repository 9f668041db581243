"""What a folder holds that ingest does not index is reported, file by file and by type, and
compressed documentation (``README.md.gz``, ``changelog.Debian.gz``) is indexed under its own
name (real SQLite files, hashing embedder)."""

from __future__ import annotations

import gzip
from contextlib import closing
from pathlib import Path

from knowhub import App, build_app
from tests.helpers import fast_settings, gzip_of_zeros, write

CHANGELOG = (
    "tar (1.34+dfsg-1) unstable; urgency=medium\n\n"
    "  * The zstd compression is now chosen with --zstd.\n"
)
README = "# Tar\n\n## Install\n\nThe quokkabeam package installs tar.\n"


def _gz(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()))
    return path


def _unsupported(folder: Path) -> Path:
    write(folder / "style.css", "body { color: red }\n")
    (folder / "logo.gif").write_bytes(b"GIF89a\x01\x00\x01\x00")
    _gz(folder / "man" / "tar.1.gz", ".TH TAR 1\n.SH NAME\ntar \\- an archiver\n")
    return folder


def test_a_folder_of_files_knowhub_does_not_read_reports_each_with_its_reason(
    app: App, tmp_path: Path
) -> None:
    report = app.collection().ingest([_unsupported(tmp_path / "docs")])
    assert report.ok and not report.current()  # nothing failed: nothing was of its types
    reasons = dict(report.skipped)
    assert reasons == {
        "logo.gif": "logo.gif: unsupported file type .gif",
        "man/tar.1.gz": "man/tar.1.gz: a manual page's roff source, which knowhub does not "
        "typeset: save the page as text (man -l tar.1.gz > tar.1.txt), which knowhub reads "
        "by its sections and options",
        "style.css": "style.css: unsupported file type .css",
    }
    assert report.skipped_by_type() == {".1.gz": 1, ".css": 1, ".gif": 1}
    assert report.note() == "nothing ingested: 3 files found, none of a type knowhub reads"
    out = report.to_dict()
    assert out["skipped_by_type"] == {".1.gz": 1, ".css": 1, ".gif": 1}
    assert sorted(s["source"] for s in out["skipped"]) == sorted(reasons)


def test_a_run_that_ingests_something_has_no_note_and_an_empty_one_says_so(
    app: App, tmp_path: Path
) -> None:
    docs = _unsupported(tmp_path / "docs")
    write(docs / "guide.md", README)
    assert app.collection().ingest([docs]).note() == ""
    (tmp_path / "empty").mkdir()
    assert (
        app.collection().ingest([tmp_path / "empty"]).note() == "nothing ingested: no files found"
    )


def test_compressed_documentation_is_searchable_under_its_own_name(
    app: App, tmp_path: Path
) -> None:
    docs = tmp_path / "doc" / "tar"
    _gz(docs / "README.md.gz", README)
    _gz(docs / "changelog.Debian.gz", CHANGELOG)
    report = app.collection().ingest([tmp_path / "doc"])
    assert sorted(report.added) == ["tar/README.md.gz", "tar/changelog.Debian.gz"]
    assert report.ok and not report.skipped
    hit = app.collection().search("quokkabeam package").hits[0]
    assert (hit.source, hit.section_path) == ("tar/README.md.gz", "Tar > Install")
    assert app.collection().search("zstd compression").hits[0].source == "tar/changelog.Debian.gz"
    again = app.collection().ingest([tmp_path / "doc"])  # by size and mtime, as any file
    assert sorted(again.unchanged) == sorted(report.added) and again.embedded == 0


def test_a_decompression_bomb_fails_and_the_rest_of_the_folder_goes_in(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    write(docs / "guide.md", README)
    gzip_of_zeros(docs / "bomb.txt.gz", 32)
    settings = fast_settings(tmp_path / "data", **{"ingest.max_file_bytes": 1 << 20})
    with closing(build_app(settings)) as app:
        report = app.collection().ingest([docs])
    assert report.added == ["guide.md"]
    assert report.failed == [
        (
            "bomb.txt.gz",
            f"{docs / 'bomb.txt.gz'}: decompresses to more than {1 << 20} bytes; "
            "raise ingest.max_file_bytes",
        )
    ]


def test_a_file_with_no_extension_is_read_when_it_is_text_compressed_or_not(
    app: App, tmp_path: Path
) -> None:
    # /usr/share/doc holds README, NEWS and copyright beside NEWS.gz: one rule for all.
    docs = tmp_path / "doc" / "tar"
    write(docs / "README", "Tar keeps the quokkabeam archive format.\n")
    write(docs / "copyright", "Copyright 1990-2024 Free Software Foundation.\n")
    _gz(docs / "NEWS.gz", "Version 1.35: the zstd compression is now chosen with --zstd.\n")
    (docs / "tar").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(64))  # a program
    (docs / "NOTES").write_bytes("Notes in Latin-1: café\n".encode("latin-1"))
    report = app.collection().ingest([tmp_path / "doc"])
    assert sorted(report.added) == ["tar/NEWS.gz", "tar/README", "tar/copyright"]
    assert report.ok and dict(report.skipped) == {
        "tar/NOTES": "tar/NOTES: holds text that is not UTF-8, and its name gives no format: "
        "save it as UTF-8, or give it the extension of its format (.txt for text)",
        "tar/tar": "tar/tar: holds binary data, not text",
    }
    assert report.skipped_by_type() == {"(no extension)": 2}
    assert app.collection().search("quokkabeam archive").hits[0].source == "tar/README"


def test_a_path_that_does_not_exist_is_no_file_found(app: App, tmp_path: Path) -> None:
    report = app.collection().ingest([tmp_path / "missing"])
    assert [source for source, _ in report.failed] == [str(tmp_path / "missing")]
    assert report.note() == "nothing ingested: no files found"
