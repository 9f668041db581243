"""Tables on PDF pages with a text layer become Markdown tables; prose stays as PDFium gives it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.encoding import normalize_newlines
from knowhub.models import LoadedDocument
from tests.pdf_tables import DEJAVU, PRICES, WQY, table_pdf
from tests.unit.ingest.conftest import Writer

HEADER = "| Item | Model | Price, USD | Weight, kg |\n| --- | --- | --- | --- |"
ROW = "| NW-O1000 | Osprey Lift OL-1000 | 94800 | 640 |"
WORDS = ["the", "robot", "crosses", "every", "aisle", "and", "docks", "at", "its", "station"]


def _load(write: Writer, data: bytes, name: str = "doc.pdf") -> LoadedDocument:
    return load(write(name, data))


def _pdfium_text(path: Path) -> list[str]:
    """Each page's text as PDFium gives it: what the loader gave every page before."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    texts = []
    for page in pdf:
        textpage = page.get_textpage()
        texts.append(normalize_newlines(textpage.get_text_bounded()).strip())
        textpage.close()
        page.close()
    pdf.close()
    return texts


@pytest.mark.parametrize("ruled", [True, False], ids=["ruled", "unruled"])
def test_a_table_becomes_a_markdown_table_between_its_prose(write: Writer, ruled: bool) -> None:
    text = _load(write, table_pdf(PRICES, ruled=ruled)).text
    assert text == (
        "Prices as of October, excluding delivery.\n\n"
        f"{HEADER}\n| NW-K200 | Kestrel AMR-200 | 31500 | 180 |\n{ROW}\n"
        "| NW-WD1 | Wren Dock WD-1 | 3750 | 25 |\n\nDelivery is quoted separately."
    )


def test_a_table_keeps_its_page(write: Writer) -> None:
    document = _load(write, table_pdf(PRICES, pages_before=["An introduction."]))
    assert document.page_starts == (0, len("An introduction.\n\n"))
    assert document.text.index(ROW) > document.page_starts[1]


def test_a_long_table_repeats_its_header_in_every_block(write: Writer) -> None:
    rows = [PRICES[0], *[(f"NW-{n:03}", f"Model {n}", str(1000 + n), str(n)) for n in range(40)]]
    text = _load(write, table_pdf(rows)).text
    blocks = [block for block in text.split("\n\n") if block.startswith("|")]
    assert len(blocks) > 2
    assert all(block.startswith(HEADER + "\n") for block in blocks)
    assert "| NW-039 | Model 39 | 1039 | 39 |" in blocks[-1]


def test_a_table_spanning_the_page_width_keeps_every_column(write: Writer) -> None:
    header = tuple(f"Col{n}" for n in range(8))
    rows = [header, *[tuple(f"r{r}c{c}" for c in range(8)) for r in range(3)]]
    text = _load(write, table_pdf(rows, ruled=False)).text
    assert "| Col0 | Col1 | Col2 | Col3 | Col4 | Col5 | Col6 | Col7 |" in text
    assert "| r2c0 | r2c1 | r2c2 | r2c3 | r2c4 | r2c5 | r2c6 | r2c7 |" in text


def test_russian_cells_are_read(write: Writer) -> None:
    rows = [("Артикул", "Модель", "Цена, руб."), ("NW-K200", "Робот Kestrel", "3150000")]
    rows.append(("NW-H6", "Манипулятор Heron", "2730000"))
    text = _load(write, table_pdf(rows, font=DEJAVU, before="Прайс-лист.")).text
    assert "| Артикул | Модель | Цена, руб. |\n| --- | --- | --- |\n" in text
    assert "| NW-H6 | Манипулятор Heron | 2730000 |" in text


def test_chinese_cells_are_read(write: Writer) -> None:
    rows = [("型号", "名称", "价格（元）"), ("OL-1000", "自主托盘机器人", "94800")]
    rows.append(("WD-1", "充电站", "3750"))
    text = _load(write, table_pdf(rows, font=WQY, before="价目表。", after="运费另计。")).text
    assert "| 型号 | 名称 | 价格（元） |\n| --- | --- | --- |\n" in text
    assert "| OL-1000 | 自主托盘机器人 | 94800 |" in text


def test_a_ruled_row_with_a_wrapped_cell_stays_one_row(write: Writer) -> None:
    long = "Autonomous pallet robot for loads up to one thousand kilograms, with lidar"
    rows = [
        ("Item", "Description", "Price"),
        ("NW-O1000", long, "94800"),
        ("NW-WD1", "Dock", "3750"),
    ]
    text = _load(write, table_pdf(rows, widths=(30, 60, 30))).text
    assert f"| NW-O1000 | {long} | 94800 |" in text
    assert "| NW-WD1 | Dock | 3750 |" in text


def test_a_table_of_numbers_only_gets_an_empty_header(write: Writer) -> None:
    rows = [("1", "2", "3"), ("4", "5", "6"), ("7", "8", "9")]
    text = _load(write, table_pdf(rows)).text
    assert "|  |  |  |\n| --- | --- | --- |\n| 1 | 2 | 3 |\n" in text


def _columns_pdf(columns: int, paragraph: object, font: Path | None = None) -> bytes:
    """A page of ``columns`` columns of prose, four paragraphs each."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    if font is not None:
        pdf.add_font("body", fname=str(font))
        pdf.set_font("body", size=10)
    else:
        pdf.set_font("helvetica", size=10)
    width = 190 / columns
    for column in range(columns):
        pdf.set_xy(10 + column * width, 15)
        for _ in range(4):
            pdf.set_x(10 + column * width)
            pdf.multi_cell(width - 6, 5, paragraph(), align="L" if column % 2 else "J")  # type: ignore[operator]
            pdf.ln(3)
    return bytes(pdf.output())


@pytest.mark.parametrize("columns", [2, 3])
def test_prose_in_columns_is_not_a_table(write: Writer, columns: int) -> None:
    rng = random.Random(columns)
    path = write("columns.pdf", _columns_pdf(columns, lambda: " ".join(rng.choices(WORDS, k=60))))
    assert load(path).text == "\n\n".join(_pdfium_text(path))


@pytest.mark.parametrize(("font", "words"), [(DEJAVU, "ru"), (WQY, "zh")])
def test_russian_and_chinese_prose_in_columns_is_not_a_table(
    write: Writer, font: Path, words: str
) -> None:
    rng = random.Random(7)
    russian = ["робот", "проезжает", "по", "складу", "и", "заряжается", "у", "станции"]
    chinese = "机器人在仓库中行驶每八小时在充电站充电一次工程师负责更换电池"
    paragraph = (
        (lambda: " ".join(rng.choices(russian, k=40)))
        if words == "ru"
        else (lambda: "".join(rng.choices(chinese, k=120)) + "。")
    )
    path = write("columns.pdf", _columns_pdf(2, paragraph, font))
    assert load(path).text == "\n\n".join(_pdfium_text(path))


def test_two_columns_of_terms_without_lines_stay_text(write: Writer) -> None:
    """A list of options and what they do looks like a two-column table; without drawn lines
    it is left as PDFium gives it."""
    rows = [("-c, --check", "checks the syntax only"), ("-o, --output", "output file")]
    rows += [("-h, --help", "display this help and exit")]
    path = write("options.pdf", table_pdf(rows, ruled=False))
    assert load(path).text == "\n\n".join(_pdfium_text(path))
