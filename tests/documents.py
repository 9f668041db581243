"""Documents in EPUB, OpenDocument, RTF and notebook formats, made at test time by the tools
that make them for users: pandoc (EPUB 3 and 2, ODT, RTF) and LibreOffice headless (ODS from
a workbook, ODP from a deck, RTF from the ODT), from sources in English, Russian and
Chinese; notebooks are JSON as nbformat 4 writes it. `make test` installs Debian's pandoc
and LibreOffice (see the Makefile); a missing tool fails the tests that need it, naming it.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import WAIT_S

# One guide, each section naming something no other section does, so a search lands on one.
GUIDE = """\
---
title: Northwind Handbook
author: Ada Lovelace
lang: en
---

# Installation

Install the Northwind server from its signed image.

## Network

The gateway address is 10.0.2.1 on the school network.

- Plug the switch into port seven
- Label the cables
  - blue for staff

| Tier | Retention |
|------|-----------|
| gold | 90 days   |

# Резервное копирование

Резервные копии создаются каждую ночь в два часа на ленточный накопитель.

# 备份策略

备份每天晚上两点运行，保存到磁带库。
"""
GUIDE_HEADINGS = ["Installation", "Network", "Резервное копирование", "备份策略"]


@dataclass(frozen=True)
class Documents:
    """The documents made once per test session (per xdist worker), in ``folder``."""

    folder: Path
    epub: Path  # pandoc, EPUB 3 (a navigation document and an NCX)
    epub2: Path  # pandoc, EPUB 2 (an NCX only)
    odt: Path  # pandoc
    rtf: Path  # pandoc: headings by \outlinelevel, text as \uN
    ods: Path  # LibreOffice, from an openpyxl workbook
    odp: Path  # LibreOffice, from a python-pptx deck
    office_rtf: Path  # LibreOffice, from the ODT: heading styles, an \info title
    office_odt: Path  # LibreOffice, from a python-docx document: its own styles and lists


def make_documents(folder: Path) -> Documents:
    """Make every document in ``folder`` (LibreOffice's conversions in one profile)."""
    source = folder / "sources"
    source.mkdir(parents=True)
    (source / "guide.md").write_text(GUIDE, encoding="utf-8")
    out = folder / "made"
    out.mkdir()
    for name, writer in [("guide.epub", "epub3"), ("guide2.epub", "epub2")]:
        _pandoc(source / "guide.md", out / name, writer)
    _pandoc(source / "guide.md", out / "guide.odt", "odt")
    _pandoc(source / "guide.md", out / "guide.rtf", "rtf")
    (source / "people.xlsx").write_bytes(_workbook())
    (source / "review.pptx").write_bytes(_deck())
    (source / "backups.docx").write_bytes(_word())
    shutil.copy(out / "guide.odt", source / "office-guide.odt")
    profile = folder / "libreoffice-profile"
    _libreoffice([source / "people.xlsx"], "ods", out, profile)
    _libreoffice([source / "review.pptx"], "odp", out, profile)
    _libreoffice([source / "office-guide.odt"], "rtf", out, profile)
    _libreoffice([source / "backups.docx"], "odt", out, profile)
    return Documents(
        folder=out,
        epub=out / "guide.epub",
        epub2=out / "guide2.epub",
        odt=out / "guide.odt",
        rtf=out / "guide.rtf",
        ods=out / "people.ods",
        odp=out / "review.odp",
        office_rtf=out / "office-guide.rtf",
        office_odt=out / "backups.odt",
    )


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: `make test` installs it (see the Makefile)")
    return found


def _pandoc(source: Path, target: Path, writer: str) -> None:
    command = [_tool("pandoc"), str(source), "--standalone", "-t", writer, "-o", str(target)]
    subprocess.run(command, check=True, timeout=WAIT_S, capture_output=True)


def _libreoffice(sources: list[Path], target: str, out: Path, profile: Path) -> None:
    """Convert with LibreOffice headless, in a profile of its own (a user's running
    LibreOffice, or another test worker's, would take the conversion over)."""
    command = [
        _tool("soffice"),
        f"-env:UserInstallation={profile.as_uri()}",
        "--headless",
        "--convert-to",
        target,
        "--outdir",
        str(out),
        *map(str, sources),
    ]
    done = subprocess.run(command, timeout=WAIT_S, capture_output=True, text=True)
    for source in sources:
        made = out / f"{source.stem}.{target}"
        assert made.exists(), f"LibreOffice made no {made.name}: {done.stdout}{done.stderr}"


def _workbook() -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    staff = workbook.active
    assert staff is not None
    staff.title = "Staff"
    staff.append(["Name", "Team", "Desk"])
    staff.append(["Ada", "Core", "Lighthouse wing"])
    staff.append(["Lin", "Ops", "Harbour room"])
    budget = workbook.create_sheet("预算")
    budget.append(["项目", "费用"])
    budget.append(["服务器机房", 1200])
    workbook.create_sheet("Пусто")
    workbook.properties.title = "People and budget"
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _word() -> bytes:
    from docx import Document

    document = Document()
    document.add_heading("Backup Guide", level=0)
    document.add_paragraph("Backups run nightly at 02:00 to the tape library.")
    document.add_heading("Restoring", level=1)
    document.add_paragraph("Stop the service first.", style="List Bullet")
    document.add_paragraph("Copy the snapshot back.", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for cell, value in zip(table._cells, ["Tier", "Retention", "gold", "90 days"], strict=True):
        cell.text = value
    document.add_heading("Подробности", level=2)
    document.add_paragraph("Снимки хранятся девяносто дней.")
    document.add_heading("细节", level=2)
    document.add_paragraph("快照保存九十天。")
    document.core_properties.title = "Backups"
    document.core_properties.author = "Lin"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _deck() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly Review"
    first.placeholders[1].text_frame.text = "Revenue grew twelve percent in the northern region"
    first.notes_slide.notes_text_frame.text = "Mention the new warehouse in Tromsø."
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Обзор рынка"
    second.placeholders[1].text_frame.text = "Выручка выросла на складе в Мурманске"
    third = deck.slides.add_slide(deck.slide_layouts[1])
    third.shapes.title.text = "市场回顾"
    third.placeholders[1].text_frame.text = "北方仓库的收入增长了"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def notebook(cells: list[dict[str, object]], **metadata: object) -> bytes:
    """An nbformat 4.5 notebook of ``cells`` (see :func:`markdown_cell`, :func:`code_cell`)
    with a Python 3 kernel, as Jupyter writes it."""
    meta = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.2"},
        **metadata,
    }
    document = {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, ensure_ascii=False).encode()


def markdown_cell(text: str) -> dict[str, object]:
    source = text.splitlines(keepends=True)
    return {
        "cell_type": "markdown",
        "id": f"m{zlib.crc32(text.encode())}",
        "metadata": {},
        "source": source,
    }


def code_cell(source: str, *outputs: dict[str, object]) -> dict[str, object]:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "id": f"c{zlib.crc32(source.encode())}",
        "metadata": {},
        "outputs": list(outputs),
        "source": source.splitlines(keepends=True),
    }


def rezip(source: Path, target: Path, changes: dict[str, bytes | None]) -> Path:
    """A copy of the zip ``source`` with members replaced, added or (None) removed: a
    tool's file made corrupt, encrypted or bigger in one place."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            if info.filename not in changes:
                new.writestr(info, old.read(info.filename))
        for name, data in changes.items():
            if data is not None:
                new.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
    return target
