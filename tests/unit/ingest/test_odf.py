"""OpenDocument files made by pandoc and LibreOffice: a text's headings, lists and tables, a
spreadsheet's sheets, a presentation's slides; encrypted, broken and bomb files refused."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import Limits, load
from tests.documents import GUIDE_HEADINGS, Documents, rezip

_CONTENT = (
    '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0">'
    "<office:body>{}</office:body></office:document-content>"
)


def _odf(tmp_path: Path, name: str, body: str, **parts: bytes) -> Path:
    """A minimal OpenDocument package around ``body`` (for shapes no tool writes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        package.writestr("content.xml", _CONTENT.format(body))
        for part, data in parts.items():
            package.writestr(part.replace("_", "/"), data)
    path = tmp_path / name
    path.write_bytes(buffer.getvalue())
    return path


def test_an_odt_renders_headings_lists_and_tables_as_markdown(documents: Documents) -> None:
    document = load(documents.odt)
    assert document.format == "odt"
    assert [h.title for h in document.headings] == ["Northwind Handbook", *GUIDE_HEADINGS]
    assert [h.level for h in document.headings] == [1, 1, 2, 1, 1]  # Title: level 1, as Word's
    assert (
        "- Plug the switch into port seven\n- Label the cables\n  - blue for staff" in document.text
    )
    assert "| Tier | Retention |\n| --- | --- |\n| gold | 90 days |" in document.text
    assert "Резервные копии создаются каждую ночь" in document.text
    assert "备份每天晚上两点运行" in document.text


def test_an_odt_is_titled_by_meta_xml_with_author_and_language(documents: Documents) -> None:
    document = load(documents.odt)
    assert document.title == "Northwind Handbook"
    assert document.metadata == {"author": "Ada Lovelace", "language": "en"}


def test_an_odt_made_by_libreoffice_keeps_its_title_style_headings_lists_and_tables(
    documents: Documents,
) -> None:
    document = load(documents.office_odt)
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "Backup Guide"),
        (1, "Restoring"),
        (2, "Подробности"),
        (2, "细节"),
    ]
    assert "- Stop the service first.\n- Copy the snapshot back." in document.text
    assert "| Tier | Retention |\n| --- | --- |\n| gold | 90 days |" in document.text
    assert "快照保存九十天。" in document.text
    assert (document.title, document.metadata["author"]) == ("Backups", "Lin")


def test_an_ods_made_by_libreoffice_is_a_section_of_tables_per_sheet(documents: Documents) -> None:
    """LibreOffice declares a million empty rows of 16,384 cells after the last value:
    they are never made (the file loads at once)."""
    document = load(documents.ods)
    assert (document.format, document.title) == ("ods", "People and budget")
    assert [h.title for h in document.headings] == ["Staff", "预算"]
    assert document.metadata["sheets"] == ["Staff", "预算", "Пусто"]
    assert document.metadata["rows"] == 3
    assert "| Ada | Core | Lighthouse wing |" in document.text
    assert "| 服务器机房 | 1200 |" in document.text


def test_an_odp_made_by_libreoffice_is_a_page_per_slide(documents: Documents) -> None:
    document = load(documents.odp)
    assert document.format == "odp"
    assert [h.title for h in document.headings] == ["Quarterly Review", "Обзор рынка", "市场回顾"]
    assert document.page_starts == tuple(h.char_start for h in document.headings)
    first = document.text[: document.page_starts[1]]
    assert "Revenue grew twelve percent" in first
    assert "Notes:\nMention the new warehouse in Tromsø." in first
    assert document.metadata["slides"] == 3
    assert "<number>" not in document.text  # the notes page's slide number field


def test_a_cell_repeated_between_values_keeps_the_columns_in_place(tmp_path: Path) -> None:
    rows = (
        "<table:table table:name='Rates'><table:table-row>"
        "<table:table-cell><text:p>City</text:p></table:table-cell>"
        "<table:table-cell table:number-columns-repeated='2'/>"
        "<table:table-cell><text:p>Rate</text:p></table:table-cell></table:table-row>"
        "<table:table-row table:number-rows-repeated='2'>"
        "<table:table-cell><text:p>Oslo</text:p></table:table-cell>"
        "<table:table-cell table:number-columns-repeated='2'/>"
        "<table:table-cell><text:p>7</text:p></table:table-cell>"
        "<table:table-cell table:number-columns-repeated='16000'/></table:table-row>"
        "</table:table>"
    )
    path = _odf(tmp_path, "rates.ods", f"<office:spreadsheet>{rows}</office:spreadsheet>")
    assert load(path).text == (
        "# Rates\n\n| City |  |  | Rate |\n| --- | --- | --- | --- |\n"
        "| Oslo |  |  | 7 |\n| Oslo |  |  | 7 |"
    )


def test_a_filled_row_repeated_a_billion_times_stops_at_the_text_limit(tmp_path: Path) -> None:
    rows = (
        "<table:table table:name='S'><table:table-row table:number-rows-repeated='1000000000'>"
        "<table:table-cell><text:p>x</text:p></table:table-cell></table:table-row></table:table>"
    )
    path = _odf(tmp_path, "many.ods", f"<office:spreadsheet>{rows}</office:spreadsheet>")
    with pytest.raises(
        LoaderError, match=re.escape("many.ods: extracts to more than 50000000 characters")
    ):
        load(path)


def test_a_generated_table_of_contents_is_left_out(tmp_path: Path) -> None:
    body = (
        "<office:text><text:table-of-content><text:index-body>"
        "<text:p>Backups ....... 3</text:p></text:index-body></text:table-of-content>"
        "<text:h text:outline-level='1'>Backups</text:h><text:p>Nightly<text:s/>at"
        "<text:line-break/>two.<text:note><text:note-citation>1</text:note-citation>"
        "<text:note-body><text:p>Local time.</text:p></text:note-body></text:note></text:p>"
        "</office:text>"
    )
    assert load(_odf(tmp_path, "toc.odt", body)).text == (
        "# Backups\n\nNightly at\ntwo. [Local time.]"
    )


def test_a_password_protected_odt_is_refused_as_encrypted(
    documents: Documents, tmp_path: Path
) -> None:
    manifest = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">'
        b'<manifest:encryption-data manifest:checksum-type="SHA1/1K"/></manifest:file-entry>'
        b"</manifest:manifest>"
    )
    changes: dict[str, bytes | None] = {
        "META-INF/manifest.xml": manifest,
        "content.xml": bytes(range(256)) * 40,  # ciphertext
    }
    path = rezip(documents.odt, tmp_path / "locked.odt", changes)
    with pytest.raises(LoaderError) as error:
        load(path)
    assert str(error.value) == (
        f"{path}: is encrypted/password-protected: open it in its application, remove the "
        "password and save it again as .odt"
    )


@pytest.mark.parametrize("name", ["broken.odt", "broken.ods", "broken.odp"])
def test_a_corrupt_opendocument_file_is_refused(
    documents: Documents, tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes(documents.odt.read_bytes()[:3000])
    with pytest.raises(LoaderError) as error:
        load(path)
    assert str(error.value) == (
        f"{path}: is not a valid {path.suffix} (corrupt or not an OpenDocument file): re-save "
        "it from its application or give it the right extension"
    )


@pytest.mark.parametrize("kind", ["odt", "ods", "odp"])
def test_an_opendocument_file_packed_like_a_zip_bomb_is_refused(
    documents: Documents, tmp_path: Path, kind: str
) -> None:
    zeros: dict[str, bytes | None] = {"Pictures/zeros.png": b"\0" * 20_000_000}
    path = rezip(getattr(documents, kind), tmp_path / f"bomb.{kind}", zeros)
    with pytest.raises(LoaderError) as error:
        load(path)
    assert f"bomb.{kind}: looks like a zip bomb: Pictures/zeros.png unpacks 20000000 bytes" in (
        str(error.value)
    )
    assert "(over 100:1, OpenDocument files pack 5-30:1)" in str(error.value)


def test_an_xml_bomb_in_content_xml_is_refused(tmp_path: Path) -> None:
    entities = "".join(
        f'<!ENTITY e{i} "{f"&e{i - 1};" * 10 if i else "lol" * 10}">' for i in range(10)
    )
    bomb = f'<?xml version="1.0"?><!DOCTYPE d [{entities}]><d>&e9;</d>'
    path = tmp_path / "laughs.odt"
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("content.xml", bomb)
    with pytest.raises(
        LoaderError, match=re.escape("laughs.odt: its part content.xml declares XML entities")
    ):
        load(path)


def test_xml_declaring_an_unknown_encoding_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "odd.odt"
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("content.xml", '<?xml version="1.0" encoding="UaF-8"?><d/>')
    with pytest.raises(LoaderError, match=r"its part content.xml declares an unknown encoding"):
        load(path)


def test_xml_nested_past_256_levels_is_refused_with_the_reason(tmp_path: Path) -> None:
    deep = "<text:section>" * 300 + "<text:p>deep</text:p>" + "</text:section>" * 300
    path = _odf(tmp_path, "deep.odt", f"<office:text>{deep}</office:text>")
    with pytest.raises(
        LoaderError, match=re.escape("deep.odt: nests XML elements deeper than 256 levels")
    ):
        load(path)


def test_an_opendocument_file_without_a_body_says_so(tmp_path: Path) -> None:
    path = _odf(tmp_path, "empty.odt", "<office:chart/>")
    with pytest.raises(
        LoaderError, match=re.escape("no content.xml with a text, spreadsheet or present")
    ):
        load(path)


def test_an_ods_over_the_text_limit_stops_with_that_reason(documents: Documents) -> None:
    with pytest.raises(LoaderError, match="extracts to more than 20 characters"):
        load(documents.ods, limits=Limits(max_chars=20))
