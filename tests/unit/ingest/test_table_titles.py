"""A title row above a table's header (a spreadsheet's "Price list, valid from …", a merged
first row) is text before the table; the real header is repeated in every block."""

from __future__ import annotations

import io

from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.markdown import markdown_table
from tests.unit.ingest.conftest import Writer

TITLE = "Price list, valid from 1 October 2024. Prices in USD."
HEADER = "| Item | Model | Price |\n| --- | --- | --- |"


def _rows(count: int) -> list[list[str]]:
    return [[f"NW-{n:03}", f"Kestrel robot model number {n}", str(1000 + n)] for n in range(count)]


def test_a_title_row_is_a_line_before_a_table_whose_blocks_all_repeat_the_header(
    write: Writer,
) -> None:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Robots"
    for row in [[TITLE], ["Item", "Model", "Price"], *_rows(30)]:
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    text = load(write("prices.xlsx", buffer.getvalue())).text
    assert text.startswith(f"# Robots\n\n{TITLE}\n\n{HEADER}\n| NW-000 |")
    blocks = text.split("\n\n")[2:]
    assert len(blocks) > 2 and all(block.startswith(HEADER + "\n") for block in blocks)
    assert text.count(TITLE) == 1


def test_csv_title_and_note_rows_are_lines_before_the_table(write: Writer) -> None:
    data = f'"{TITLE}",,\nAll prices exclude delivery,,\nItem,Model,Price\nNW-1,Kestrel,3150\n'
    text = load(write("prices.csv", data.encode())).text
    assert text == (
        f"# prices\n\n{TITLE}\nAll prices exclude delivery\n\n{HEADER}\n| NW-1 | Kestrel | 3150 |"
    )


def test_a_table_whose_first_row_fills_it_has_no_title() -> None:
    rows = [["Item", "", "Price"], ["NW-1", "Kestrel", "3150"]]
    assert (
        markdown_table(rows)
        == "| Item |  | Price |\n| --- | --- | --- |\n| NW-1 | Kestrel | 3150 |"
    )
    assert markdown_table([["Name", "Age"], ["Ada", "36"]]).startswith("| Name | Age |")


def test_an_empty_first_row_stays_the_header() -> None:
    assert markdown_table([["", ""], ["1", "2"]]) == "|  |  |\n| --- | --- |\n| 1 | 2 |"


def test_a_merged_title_row_in_word_is_a_line_before_the_table(write: Writer) -> None:
    from docx import Document

    document = Document()
    table = document.add_table(rows=3, cols=3)
    table.cell(0, 0).merge(table.cell(0, 2)).text = TITLE
    for row, values in [(1, ["Item", "Model", "Price"]), (2, ["NW-1", "Kestrel", "3150"])]:
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    text = load(write("prices.docx", buffer.getvalue())).text
    assert text == f"{TITLE}\n\n{HEADER}\n| NW-1 | Kestrel | 3150 |"


def test_a_merged_title_row_in_powerpoint_is_a_line_before_the_table(write: Writer) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[6])
    table = slide.shapes.add_table(3, 3, Inches(1), Inches(1), Inches(6), Inches(2)).table
    table.cell(0, 0).merge(table.cell(0, 2))
    table.cell(0, 0).text = TITLE
    for index, value in enumerate(["Item", "Model", "Price", "NW-1", "Kestrel", "3150"]):
        table.cell(1 + index // 3, index % 3).text = value
    buffer = io.BytesIO()
    presentation.save(buffer)
    text = load(write("prices.pptx", buffer.getvalue())).text
    assert f"{TITLE}\n\n{HEADER}\n| NW-1 | Kestrel | 3150 |" in text


def test_a_spanning_title_row_in_html_is_a_line_before_the_table(write: Writer) -> None:
    html = (
        "<html><body><h1>Prices</h1>\n<table>\n"
        f'<tr><th colspan="3">{TITLE}</th></tr>\n'
        "<tr><th>Item</th><th>Model</th><th>Price</th></tr>\n"
        "<tr><td>NW-1</td><td>Kestrel</td><td>3150</td></tr>\n</table></body></html>\n"
    )
    document = load(write("prices.html", html.encode()))
    assert document.text == f"# Prices\n\n{TITLE}\n\n{HEADER}\n| NW-1 | Kestrel | 3150 |"
