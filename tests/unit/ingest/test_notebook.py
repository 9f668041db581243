"""Jupyter notebooks: Markdown cells as written, code in fences of the kernel's language,
outputs as text; a 50 MB plot passed over within bounded memory; bad notebooks refused."""

from __future__ import annotations

import base64
import json
import tracemalloc
from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import Limits, load
from knowhub.ingest.loaders.figures import ImageOptions
from knowhub.ingest.loaders.notebook import MAX_OUTPUT_CHARS
from knowhub.providers.images import ImageStore
from tests.documents import code_cell, markdown_cell, notebook
from tests.pictures_helpers import shapes_png

_STREAM = {"output_type": "stream", "name": "stdout", "text": ["rows: 3\n", "done\n"]}
_FRAME = {
    "output_type": "execute_result",
    "execution_count": 2,
    "metadata": {},
    "data": {
        "text/plain": ["   city  sales\n", "0  Oslo     12"],
        "text/html": [
            "<table><tr><th>city</th><th>sales</th></tr>",
            "<tr><td>Oslo</td><td>12</td></tr></table>",
        ],
    },
}
_ERROR = {
    "output_type": "error",
    "ename": "KeyError",
    "evalue": "'region'",
    "traceback": ["\x1b[0;31mKeyError\x1b[0m Traceback (most recent call last)"],
}
_CELLS = [
    markdown_cell("# Sales analysis\n\nWe load the quarterly sales of the harbour shops."),
    code_cell("# count the rows\nimport pandas as pd\nprint(len(frame))", _STREAM),
    code_cell("frame.head()", _FRAME, _ERROR),
    markdown_cell(
        "## Продажи по регионам\n\nВыручка выросла в Мурманске.\n\n"
        "### 区域销售\n\n北方仓库的收入增长了。"
    ),
    {"cell_type": "raw", "id": "r1", "metadata": {}, "source": ["\\newpage"]},
]


def _write(tmp_path: Path, data: bytes, name: str = "sales.ipynb") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_notebook_reads_its_cells_in_order_as_markdown(tmp_path: Path) -> None:
    document = load(_write(tmp_path, notebook(_CELLS)))
    assert document.format == "ipynb"
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "Sales analysis"),
        (2, "Продажи по регионам"),
        (3, "区域销售"),
    ]  # "# count the rows" is code, in a fence: no heading
    assert document.text == (
        "# Sales analysis\n\nWe load the quarterly sales of the harbour shops.\n\n"
        "```python\n# count the rows\nimport pandas as pd\nprint(len(frame))\n```\n\n"
        "```\nrows: 3\ndone\n```\n\n"
        "```python\nframe.head()\n```\n\n"
        "| city | sales |\n| --- | --- |\n| Oslo | 12 |\n\n"
        "```\nKeyError: 'region'\n```\n\n"
        "## Продажи по регионам\n\nВыручка выросла в Мурманске.\n\n### 区域销售\n\n"
        "北方仓库的收入增长了。"
    )


def test_a_notebook_is_titled_by_its_heading_with_kernel_and_language(tmp_path: Path) -> None:
    document = load(_write(tmp_path, notebook(_CELLS)))
    assert document.title == "Sales analysis"
    assert document.metadata == {"kernel": "Python 3", "language": "python", "cells": 5}
    titled = load(_write(tmp_path, notebook(_CELLS, title="Harbour sales"), "titled.ipynb"))
    assert titled.title == "Harbour sales"


def test_a_50_mb_plot_is_passed_over_within_bounded_memory(tmp_path: Path) -> None:
    """The plot is no text (its text/plain says only <Figure>); the cells around it are
    read, holding no more than a few copies of the file."""
    plot = base64.b64encode(b"\x89PNG" + bytes(37_500_000)).decode()
    figure = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": plot, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
    }
    cells = [markdown_cell("# Plot\n\nThe harbour trend."), code_cell("plot()", figure)]
    path = _write(tmp_path, notebook(cells))
    size = path.stat().st_size
    assert size > 50_000_000
    tracemalloc.start()
    try:
        document = load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert document.text == "# Plot\n\nThe harbour trend.\n\n```python\nplot()\n```"
    assert peak < 4 * size, f"peak {peak:,} bytes for a file of {size:,}"


def test_a_plot_is_a_picture_described_as_a_documents_pictures_are(tmp_path: Path) -> None:
    def caption(sha256: str, data: bytes, mime: str) -> str:
        assert data == plot and mime == "image/png"
        return "A line chart of harbour sales by month"

    plot = shapes_png(7)
    figure = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": base64.b64encode(plot).decode(), "text/plain": ["<Figure>"]},
    }
    images = ImageOptions(ImageStore(tmp_path / "images"), caption=caption)
    path = _write(tmp_path, notebook([code_cell("plot()", figure)]))
    document = load(path, limits=Limits(images=images))
    assert document.text == (
        "```python\nplot()\n```\n\n[Image: A line chart of harbour sales by month]"
    )
    assert [image.description for image in document.images] == [
        "A line chart of harbour sales by month"
    ]


def test_a_long_stream_output_is_passed_over(tmp_path: Path) -> None:
    log = {"output_type": "stream", "name": "stdout", "text": "epoch\n" * MAX_OUTPUT_CHARS}
    short = {"output_type": "stream", "name": "stdout", "text": "trained\n"}
    path = _write(tmp_path, notebook([code_cell("train()", log, short)]))
    assert load(path).text == "```python\ntrain()\n```\n\n```\ntrained\n```"


def test_a_notebook_that_is_not_json_names_the_problem(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"cells": [', "cut.ipynb")
    with pytest.raises(LoaderError, match=r"cut.ipynb: is not a valid notebook \(not JSON"):
        load(path)


def test_an_nbformat_3_notebook_asks_for_a_conversion(tmp_path: Path) -> None:
    old = json.dumps({"nbformat": 3, "worksheets": [{"cells": []}], "metadata": {}})
    with pytest.raises(LoaderError) as error:
        load(_write(tmp_path, old.encode(), "old.ipynb"))
    assert str(error.value).endswith(
        "old.ipynb: is not an nbformat 4 notebook (nbformat 3, no list of cells): convert it "
        "with `jupyter nbconvert --to notebook`"
    )
