"""Loaders for tabular files, CSV (stdlib csv) and XLSX (openpyxl), as Markdown tables.

Each sheet becomes a ``# <sheet>`` heading (for CSV, the file stem) followed by
its rows as Markdown tables whose header is the first row; see
:func:`~knowhub.ingest.loaders.markdown.markdown_table` for how long tables split.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from knowhub.ingest.loaders.common import (
    CharBudget,
    Limits,
    check_office_file,
    loader_error,
    not_office_file,
    pick_title,
)
from knowhub.ingest.loaders.encoding import decode_document
from knowhub.ingest.loaders.markdown import markdown_headings, markdown_table
from knowhub.models import LoadedDocument

__all__ = ["load_csv", "load_xlsx", "sheets_document"]

_SNIFF_CHARS = 16384
_DELIMITERS = ",;\t|"


def load_csv(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a CSV file, guessing its delimiter and quoting.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded text.

    Returns:
        The document, titled by its stem.

    Raises:
        LoaderError: the text is not valid CSV, or over the limit.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(
            text[:_SNIFF_CHARS], delimiters=_DELIMITERS
        )
    except csv.Error:
        dialect = csv.excel  # the sniffer gives up on one-column files
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error as exc:
        raise loader_error(
            path, f"is not valid CSV ({exc}): fix the file or export it again"
        ) from exc
    return dataclasses.replace(
        sheets_document(path, "csv", [(path.stem, rows)], path.stem), warnings=warnings
    )


def load_xlsx(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load an Excel workbook: every worksheet's cached cell values.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_bytes`` bounds the unpacked parts, ``max_chars`` the cell text.

    Returns:
        The document, titled by the workbook's Title property, else its stem.

    Raises:
        LoaderError: the file is encrypted, not a valid .xlsx, or over a limit.
    """
    check_office_file(path, data, ".xlsx", limits)
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        # data_only: formulas give their last computed value, not their source.
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (InvalidFileException, KeyError, ValueError, SyntaxError, zipfile.BadZipFile) as exc:
        raise not_office_file(path, ".xlsx", exc) from exc
    try:
        budget = CharBudget(path, limits)
        sheets = [(sheet.title, _sheet_rows(sheet, budget)) for sheet in workbook.worksheets]
        title = workbook.properties.title
    finally:
        workbook.close()  # read-only workbooks keep the archive open until closed
    return sheets_document(path, "xlsx", sheets, pick_title(path, title))


def sheets_document(
    path: Path, fmt: str, sheets: Sequence[tuple[str, list[list[str]]]], title: str
) -> LoadedDocument:
    """A workbook's document: each sheet a ``# <name>`` section of Markdown tables (its
    empty rows, and the empty columns right of its last value, left out); cited by sheet."""
    blocks: list[str] = []
    row_count = 0
    for name, rows in sheets:
        kept = _trim(rows)
        if kept:
            blocks.append(f"# {' '.join(name.split())}\n\n{markdown_table(kept)}")
            row_count += len(kept) - 1  # the first row is the header
    text = "\n\n".join(blocks)
    return LoadedDocument(
        text=text,
        title=title,
        format=fmt,
        headings=markdown_headings(text),
        metadata={"sheets": [name for name, _ in sheets], "rows": row_count},
        line_map=None,  # tables rendered anew (headers repeated): cited by sheet
    )


def _sheet_rows(sheet: Any, budget: CharBudget) -> list[list[str]]:
    """Each row's cell texts; a sheet may declare a million empty cells a row, so even
    empty cells count against the budget, one character each."""
    rows = []
    for row in sheet.iter_rows(values_only=True):
        cells = [_cell_text(value) for value in row]
        budget.count(sum(len(cell) or 1 for cell in cells))
        rows.append(cells)
    return rows


def _trim(rows: Iterable[list[str]]) -> list[list[str]]:
    """Drop empty rows and the empty columns to the right of every row's last value."""
    kept = [row for row in rows if any(cell.strip() for cell in row)]
    width = max((_last_filled(row) for row in kept), default=0)
    return [row[:width] for row in kept]


def _last_filled(row: list[str]) -> int:
    return max((index + 1 for index, cell in enumerate(row) if cell.strip()), default=0)


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # Excel stores every number as a float: 3, not 3.0
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        return value.date().isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
