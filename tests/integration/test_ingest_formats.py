"""EPUB, OpenDocument, RTF and notebook files through the whole pipeline: real SQLite, hybrid
search (hashing embedder), each hit cited by its section (and a slide by its page), in
English, Russian and Chinese; a broken file fails alone, saying why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from knowhub import App
from tests.documents import Documents, code_cell, markdown_cell, notebook

# (document, query, section path, page)
CITED = [
    ("epub", "gateway address on the school network", "Installation > Network", None),
    ("epub2", "ленточный накопитель каждую ночь", "Резервное копирование", None),
    ("odt", "备份 磁带库", "备份策略", None),
    ("rtf", "gateway address on the school network", "Installation > Network", None),
    ("office_rtf", "ленточный накопитель каждую ночь", "Резервное копирование", None),
    ("ods", "Lighthouse wing desk", "Staff", None),
    ("ods", "服务器机房 费用", "预算", None),
    ("odp", "new warehouse in Tromsø", "Quarterly Review", 1),
    ("odp", "Выручка выросла на складе в Мурманске", "Обзор рынка", 2),
]


def _only(tmp_path: Path, source: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(source, folder / source.name)
    return folder


@pytest.mark.parametrize(("kind", "query", "section", "page"), CITED)
def test_a_hit_is_cited_by_its_section_and_slide(
    app: App,
    documents: Documents,
    tmp_path: Path,
    kind: str,
    query: str,
    section: str,
    page: int | None,
) -> None:
    source: Path = getattr(documents, kind)
    report = app.collection().ingest([_only(tmp_path, source)])
    assert report.added == [source.name], report.failed
    hit = app.collection().search(query, top_k=1).hits[0]
    assert (hit.source, hit.section_path, hit.page) == (source.name, section, page)
    assert (hit.line_start, hit.line_end) == (0, 0)  # no lines a reader could go to


def test_a_notebook_hit_is_cited_by_its_markdown_section(app: App, tmp_path: Path) -> None:
    cells = [
        markdown_cell("# Harbour sales\n\nLoading the shop data."),
        markdown_cell("## Выручка\n\nВыручка выросла в Мурманске."),
        code_cell("frame.groupby('region').sum()"),
    ]
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "sales.ipynb").write_bytes(notebook(cells))
    assert app.collection().ingest([folder]).added == ["sales.ipynb"]
    hit = app.collection().search("groupby region sum", top_k=1).hits[0]
    assert (hit.source, hit.section_path) == ("sales.ipynb", "Harbour sales > Выручка")


def test_each_broken_file_fails_alone_beside_good_documents(
    app: App, documents: Documents, tmp_path: Path
) -> None:
    folder = _only(tmp_path, documents.odt)
    shutil.copy(documents.epub, folder / "guide.epub")
    (folder / "cut.epub").write_bytes(documents.epub.read_bytes()[:2000])
    (folder / "cut.ods").write_bytes(documents.ods.read_bytes()[:2000])
    (folder / "notes.rtf").write_text("plain words saved as .rtf")
    (folder / "cut.ipynb").write_bytes(b'{"cells": [')
    report = app.collection().ingest([folder])
    assert sorted(report.added) == ["guide.epub", "guide.odt"]
    assert {source: reason.split(": ", 1)[1] for source, reason in report.failed} == {
        "cut.epub": "is not a valid .epub (corrupt or not an EPUB book): re-save it from its "
        "application or give it the right extension",
        "cut.ods": "is not a valid .ods (corrupt or not an OpenDocument file): re-save it from "
        "its application or give it the right extension",
        "notes.rtf": "is not an RTF document (it does not start with {\\rtf): give it the "
        "extension of its format, or save it again as RTF",
        "cut.ipynb": "is not a valid notebook (not JSON: Expecting value: line 1 column 12 "
        "(char 11)): save it again from Jupyter",
    }
