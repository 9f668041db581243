"""Coverage and names on this machine's man pages (at, find, less, which, time) saved with
``col -b``, ingested through the real pipeline into a real App (SQLite, hashing embedder)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.answer.coverage import FREQUENT
from knowhub.answer.pipeline import collect
from knowhub.models import DocumentRecord
from tests.helpers import fast_settings, write
from tests.man_pages import rendered

PAGES = ("at", "find", "less", "which", "time")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    root = tmp_path_factory.mktemp("man")
    for page in PAGES:
        write(root / "docs" / f"{page}.1.txt", rendered(page, "man -Tutf8 | col -b"))
    built = build_app(fast_settings(root / "data"))
    assert len(built.collection().ingest([root / "docs"]).added) == len(PAGES)
    yield built
    built.close()


def test_the_page_a_stopword_names_is_indexed_under_that_name(app: App) -> None:
    # Every chunk of the page holds its name (a few others hold the stem "at" of "ats").
    for name, page in (("at", "at.1.txt"), ("which", "which.1.txt")):
        chunks = len(app.collection().document_chunks(_record(app, page)))
        assert app.collection().term_counts([name], 100)[name] >= chunks
    # The lexical leg ranks the named page first (the hashing embedder's dense leg may not).
    for question, page in (("the at command", "at.1.txt"), ("the which command", "which.1.txt")):
        hits = app.collection().search(question, top_k=10).hits
        assert next(h.source for h in hits if h.lexical_rank == 1) == page


def _record(app: App, source: str) -> DocumentRecord:
    (record,) = [r for r in app.collection().documents() if r.source == source]
    return record


def test_a_job_deleted_with_at_is_answered_from_the_at_page(app: App) -> None:
    # "queued" against the page's "queue" needs the embedder's meaning (hashing has none).
    answer = collect(app.collection().ask("How do I delete a job with at?"))
    assert answer["hit_type"] == "rag" and answer["not_mentioned"] == []
    assert answer["sources"][0]["source"] == "at.1.txt"


def test_a_question_about_a_product_the_pages_never_name_is_refused(app: App) -> None:
    answer = collect(app.collection().ask("How do I delete a job with at in Kubernetes?"))
    assert answer["hit_type"] == "insufficient_context"
    assert answer["not_mentioned"] == ["Kubernetes"] and "not_mentioned" in answer["reasons"]
    assert answer["answer"] == "The documents do not mention Kubernetes."


def test_an_answer_whose_minor_name_the_sources_lack_says_what_is_not_mentioned(
    app: App,
) -> None:
    # GNU is in the find and less pages, not in at's: the answer stands and names it.
    answer = collect(app.collection().ask("How do I delete a queued job with at and atrm on GNU?"))
    assert answer["hit_type"] == "rag" and answer["not_mentioned"] == ["GNU"]
    assert answer["answer"].endswith(" The documents do not mention GNU.")
    assert "[1]" in answer["answer"] and "not_mentioned" in answer["reasons"]


def test_a_frequent_name_the_sources_lack_is_not_reported(tmp_path: Path) -> None:
    # JSON is in FREQUENT chunks or more (no key term), none of them about ldd: the answer
    # stands and says nothing of it (saying it flagged right answers for "Linux" or "GNU").
    for n in range(FREQUENT):
        write(tmp_path / "docs" / f"report{n}.md", f"Report {n} writes its rows as JSON.\n")
    write(tmp_path / "docs" / "ldd.md", "ldd prints the shared objects each program needs.\n")
    built = build_app(fast_settings(tmp_path / "data"))
    try:
        assert len(built.collection().ingest([tmp_path / "docs"]).added) == FREQUENT + 1
        answer = collect(built.collection().ask("How do I make ldd print shared objects as JSON?"))
    finally:
        built.close()
    assert answer["hit_type"] == "rag" and answer["not_mentioned"] == []
    assert answer["sources"][0]["source"] == "ldd.md"
    assert "not mention" not in answer["answer"] and "not_mentioned" not in answer["reasons"]


def test_an_index_from_before_names_is_read_again_by_the_next_ingest(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "at.1.txt", rendered("at", "man -Tutf8 | col -b"))
    settings = fast_settings(tmp_path / "data")
    first = build_app(settings)
    first.collection().ingest([tmp_path / "docs"])
    first.close()
    db = sqlite3.connect(tmp_path / "data" / "knowhub.sqlite3")  # a record as older ones were
    with db:
        db.execute("UPDATE documents SET metadata = json_remove(metadata, '$.knowhub.lexical')")
    db.close()
    again = build_app(settings)
    try:
        assert again.collection().ingest([tmp_path / "docs"]).updated == ["at.1.txt"]
        assert again.collection().ingest([tmp_path / "docs"]).unchanged == ["at.1.txt"]
    finally:
        again.close()
