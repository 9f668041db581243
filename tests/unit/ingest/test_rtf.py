"""RTF made by pandoc and LibreOffice: paragraphs, headings by outline level or heading style,
tables and lists; Cyrillic and Chinese as \\uN or as code-page bytes; bad files refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import Limits, load
from knowhub.ingest.loaders.rtf import MAX_GROUPS
from tests.documents import GUIDE_HEADINGS, Documents


def _bytes(text: str, encoding: str) -> str:
    """``text`` as RTF writes bytes of a code page: ``\\'hh`` each."""
    return "".join(f"\\'{byte:02x}" for byte in text.encode(encoding))


def _rtf(tmp_path: Path, body: str, header: str = r"\ansi\ansicpg1252\deff0") -> Path:
    path = tmp_path / "note.rtf"
    path.write_bytes(("{\\rtf1" + header + body + "}").encode("ascii"))
    return path


def test_pandoc_rtf_headings_come_from_their_outline_levels(documents: Documents) -> None:
    document = load(documents.rtf)
    assert document.format == "rtf"
    assert [(h.level, h.title) for h in document.headings] == list(
        zip([1, 2, 1, 1], GUIDE_HEADINGS, strict=True)
    )
    assert "The gateway address is 10.0.2.1 on the school network." in document.text
    assert "Резервные копии создаются каждую ночь в два часа" in document.text
    assert "备份每天晚上两点运行，保存到磁带库。" in document.text
    assert "| Tier | Retention |\n| --- | --- |\n| gold | 90 days |" in document.text
    assert "\\u" not in document.text and "?" not in document.text  # fallbacks skipped


def test_libreoffice_rtf_headings_come_from_their_styles(documents: Documents) -> None:
    document = load(documents.office_rtf)
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "Northwind Handbook"),  # the Title style
        *zip([1, 2, 1, 1], GUIDE_HEADINGS, strict=True),
    ]
    assert "- Plug the switch into port seven\n- Label the cables\n  - blue for staff" in (
        document.text
    )
    assert (document.title, document.metadata) == ("Northwind Handbook", {"author": "Ada Lovelace"})


def test_code_page_bytes_are_decoded_by_the_font_charset(tmp_path: Path) -> None:
    fonts = r"{\fonttbl{\f0\fswiss\fcharset0 Arial;}{\f1\froman\fcharset204 Times New Roman;}}"
    body = fonts + r"\pard\f1 " + _bytes("Резервные копии", "cp1251") + r"\par"
    assert load(_rtf(tmp_path, body)).text == "Резервные копии"


def test_code_page_bytes_are_decoded_by_ansicpg_double_byte_pairs_together(
    tmp_path: Path,
) -> None:
    body = r"{\fonttbl{\f0\fnil SimSun;}}\pard " + _bytes("备份策略", "gbk") + r"\par"
    assert load(_rtf(tmp_path, body, r"\ansi\ansicpg936\deff0")).text == "备份策略"


def test_unicode_escapes_skip_their_fallbacks_and_join_surrogate_pairs(tmp_path: Path) -> None:
    body = r"\uc1\pard caf\u233\'e9 \u-10179?\u-8694? ok\uc2\u1044\'3f\'3f!\par"
    assert load(_rtf(tmp_path, body)).text == "café 😊 okД!"
    wild = r"\pard a\u9999999999?b\u-70000?c\par"  # no 16-bit numbers: no characters
    assert load(_rtf(tmp_path, wild)).text == "a\ufffdb\ufffdc"


def test_pictures_fields_and_ignorable_destinations_are_left_out(tmp_path: Path) -> None:
    body = (
        r"{\info{\title Rates}{\author Lin}}\pard Before {\*\bkmkstart x}"
        r"{\pict\pngblip 89504e47}{\field{\*\fldinst HYPERLINK 'http://a'}{\fldrslt link}}"
        r"{\*\unknowndest secret} after\bin3 {}}\par"
    )
    document = load(_rtf(tmp_path, body))
    assert (document.text, document.title) == ("Before link after", "Rates")


def test_a_file_that_is_not_rtf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fake.rtf"
    path.write_text("just text, saved with the wrong extension")
    with pytest.raises(LoaderError, match=r"fake.rtf: is not an RTF document \(it does not start"):
        load(path)


def test_groups_nested_too_deep_are_refused(tmp_path: Path) -> None:
    path = _rtf(tmp_path, "{" * (MAX_GROUPS + 1) + "x" + "}" * (MAX_GROUPS + 1))
    with pytest.raises(LoaderError, match=f"nests groups more than {MAX_GROUPS} deep"):
        load(path)


def test_rtf_over_the_text_limit_stops_with_that_reason(documents: Documents) -> None:
    with pytest.raises(LoaderError, match="extracts to more than 50 characters"):
        load(documents.rtf, limits=Limits(max_chars=50))
