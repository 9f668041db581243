"""EPUB books made by pandoc: chapters in spine order, section paths headed by each chapter's
title, the package's metadata; broken, encrypted and bomb books refused, each saying why."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import Limits, load
from tests.documents import GUIDE_HEADINGS, Documents, rezip


def _titles(path: Path) -> list[tuple[int, str]]:
    return [(h.level, h.title) for h in load(path).headings]


@pytest.mark.parametrize("kind", ["epub", "epub2"])
def test_an_epub_reads_its_chapters_in_spine_order_with_their_headings(
    documents: Documents, kind: str
) -> None:
    """EPUB 3 titles chapters from its navigation document, EPUB 2 from its NCX."""
    document = load(getattr(documents, kind))
    assert document.format == "epub"
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "Northwind Handbook"),  # pandoc's title page, titled by its heading
        (1, "Installation"),
        (2, "Network"),
        (1, "Резервное копирование"),
        (1, "备份策略"),
    ]
    assert [h.title for h in document.headings][1:] == GUIDE_HEADINGS
    assert document.text.index("signed image") < document.text.index("ленточный накопитель")
    assert "| gold | 90 days |" in document.text
    assert "- Plug the switch into port seven" in document.text
    assert "<section" not in document.text and "stylesheet" not in document.text


def test_an_epub_is_titled_by_its_package_with_author_and_language(documents: Documents) -> None:
    document = load(documents.epub)
    assert document.title == "Northwind Handbook"
    assert document.metadata == {"author": "Ada Lovelace", "language": "en", "chapters": 4}
    assert document.line_map is None  # cited by section, not by lines of XHTML in a zip


def test_a_chapter_titled_apart_from_its_first_heading_heads_its_headings(
    documents: Documents, tmp_path: Path
) -> None:
    with zipfile.ZipFile(documents.epub) as book:
        nav = book.read("EPUB/nav.xhtml").decode()
    renamed = nav.replace(">Installation</a>", ">Part one: setting up</a>")
    path = rezip(documents.epub, tmp_path / "renamed.epub", {"EPUB/nav.xhtml": renamed.encode()})
    assert _titles(path)[1:4] == [(1, "Part one: setting up"), (2, "Installation"), (3, "Network")]


def test_a_book_without_a_package_document_is_not_a_valid_epub(
    documents: Documents, tmp_path: Path
) -> None:
    path = rezip(documents.epub, tmp_path / "bare.epub", {"META-INF/container.xml": None})
    with pytest.raises(LoaderError) as error:
        load(path)
    assert str(error.value) == (
        f"{path}: is not a valid .epub (no META-INF/container.xml naming its package "
        "document): re-save it from its application, or give it the right extension"
    )


def test_a_cut_epub_is_not_a_valid_epub(documents: Documents, tmp_path: Path) -> None:
    path = tmp_path / "cut.epub"
    path.write_bytes(documents.epub.read_bytes()[:2000])
    with pytest.raises(LoaderError, match=r"cut.epub: is not a valid \.epub \(corrupt"):
        load(path)


def test_a_chapter_that_is_not_well_formed_names_its_part(
    documents: Documents, tmp_path: Path
) -> None:
    bad = {"EPUB/content.opf": b"<package><manifest><item"}
    path = rezip(documents.epub, tmp_path / "bad.epub", bad)
    with pytest.raises(LoaderError, match=r"its part EPUB/content.opf is not well-formed XML"):
        load(path)


def test_an_epub_with_encrypted_chapters_is_refused(documents: Documents, tmp_path: Path) -> None:
    encryption = (
        b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        b'<enc:CipherData><enc:CipherReference URI="EPUB/text/ch001.xhtml"/></enc:CipherData>'
        b"</enc:EncryptedData></encryption>"
    )
    path = rezip(documents.epub, tmp_path / "drm.epub", {"META-INF/encryption.xml": encryption})
    with pytest.raises(LoaderError, match=r"drm.epub: is encrypted/password-protected"):
        load(path)


def test_an_epub_that_unpacks_like_a_zip_bomb_is_refused(
    documents: Documents, tmp_path: Path
) -> None:
    zeros = b"\0" * 20_000_000
    path = rezip(documents.epub, tmp_path / "bomb.epub", {"EPUB/text/ch009.xhtml": zeros})
    with pytest.raises(LoaderError, match=r"bomb.epub: looks like a zip bomb: EPUB/text/ch009"):
        load(path)


def test_an_epub_over_the_text_limit_stops_with_that_reason(documents: Documents) -> None:
    with pytest.raises(LoaderError, match="extracts to more than 200 characters"):
        load(documents.epub, limits=Limits(max_chars=200))
