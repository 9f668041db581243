"""Jupyter notebook loader (``.ipynb``, nbformat 4): cells in order, as Markdown.

A Markdown cell is kept as its author wrote it (its headings are the sections); a code
cell is a fenced block in the kernel's language; its outputs follow as text: streams and
``text/plain`` results in fences, ``text/markdown`` as text, ``text/html`` (a DataFrame)
through the HTML loader (tables as Markdown tables), an error as its name and value, and
a PNG, JPEG or GIF as a picture for the document's pictures (described as a Word
document's pictures are, when ``ingest.images`` keeps them). An output larger than
:data:`MAX_OUTPUT_CHARS` (a plot of 50 MB, a log of a training run) is passed over: it
would crowd out the cells that explain it. Raw cells are for converters, not readers:
left out.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from knowhub.ingest.loaders.common import CharBudget, Limits, loader_error, pick_title
from knowhub.ingest.loaders.figures import Figures
from knowhub.ingest.loaders.html import load_html
from knowhub.ingest.loaders.markdown import escape_markdown, heading_title, markdown_headings
from knowhub.ingest.loaders.ocr import Ocr
from knowhub.models import LoadedDocument

__all__ = ["MAX_OUTPUT_CHARS", "load_notebook"]

MAX_OUTPUT_CHARS = 100_000
"""The most characters one output may hold (a picture's: its base64) to be read."""

_PICTURES = ("image/png", "image/jpeg", "image/gif")
# ANSI colours of a traceback or a progress bar: terminal formatting, not text.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def load_notebook(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a Jupyter notebook as Markdown text.

    Args:
        path: the file.
        data: its bytes (JSON: UTF-8, as nbformat writes it).
        limits: ``max_chars`` bounds the text.

    Returns:
        The document, titled by the notebook's ``metadata.title``, else its first heading,
        else its stem; ``metadata`` holds the kernel and language.

    Raises:
        LoaderError: the file is no JSON, or no nbformat 4 notebook, or over a limit.
    """
    notebook = _parse(path, data)
    meta = notebook.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    language = _language(meta)
    budget = CharBudget(path, limits)
    figures = Figures(path, limits.images, Ocr(limits.ocr, limits.deadline))
    blocks = (
        budget.spend(block)
        for cell in notebook["cells"]
        if isinstance(cell, dict)
        for block in _cell_blocks(path, cell, language, figures, limits)
        if block.strip()
    )
    text = "\n\n".join(blocks)
    headings = markdown_headings(text)
    kernel = meta.get("kernelspec")
    metadata = {
        "kernel": _string(kernel.get("display_name") or kernel.get("name"))
        if isinstance(kernel, dict)
        else "",
        "language": language,
        "cells": len(notebook["cells"]),
    }
    return LoadedDocument(
        text=text,
        title=pick_title(path, _string(meta.get("title")), heading_title(headings)),
        format="ipynb",
        headings=headings,
        metadata={key: value for key, value in metadata.items() if value},
        line_map=None,  # the JSON's lines are none a reader goes to: cited by section
        warnings=figures.notes(),
        images=figures.images(text),
    )


def _parse(path: Path, data: bytes) -> dict[str, Any]:
    try:
        notebook = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise loader_error(
            path, f"is not a valid notebook (not JSON: {exc}): save it again from Jupyter"
        ) from exc
    except RecursionError as exc:
        raise loader_error(
            path, "nests JSON deeper than Python's reader goes: no notebook does"
        ) from exc
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        version = notebook.get("nbformat") if isinstance(notebook, dict) else None
        raise loader_error(
            path,
            f"is not an nbformat 4 notebook (nbformat {version}, no list of cells): convert "
            "it with `jupyter nbconvert --to notebook`",
        )
    return notebook


def _language(meta: dict[str, Any]) -> str:
    """The kernel's language: ``language_info.name``, else the kernelspec's."""
    for key in ("language_info", "kernelspec"):
        section = meta.get(key)
        if isinstance(section, dict):
            name = _string(section.get("name" if key == "language_info" else "language"))
            if name:
                return name.lower()
    return ""


def _cell_blocks(
    path: Path, cell: dict[str, Any], language: str, figures: Figures, limits: Limits
) -> Iterator[str]:
    kind = cell.get("cell_type")
    source = _string(cell.get("source"))
    if kind == "markdown":
        yield source
    elif kind == "code":
        yield _fenced(source, language)
        outputs = cell.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            if isinstance(output, dict):
                yield _output(path, output, figures, limits)


def _output(path: Path, output: dict[str, Any], figures: Figures, limits: Limits) -> str:
    """One output's block: ``""`` for none worth reading, or one over the size."""
    kind = output.get("output_type")
    if kind == "stream":
        return _text_block(output.get("text"))
    if kind == "error":
        return _text_block(f"{_string(output.get('ename'))}: {_string(output.get('evalue'))}")
    data = output.get("data")
    if kind not in ("execute_result", "display_data") or not isinstance(data, dict):
        return ""
    # Sizes are looked at before a value is joined: a plot's base64 is not copied.
    sized = {mime: value for mime, value in data.items() if _length(value) <= MAX_OUTPUT_CHARS}
    if any(mime in data for mime in _PICTURES):
        # Its text/plain (<Figure size 640x480>) says nothing: the picture or nothing.
        mime = next((mime for mime in _PICTURES if mime in sized), None)
        return _picture(_string(sized[mime]), figures) if mime else ""
    if "text/html" in sized:
        page = load_html(path, _string(sized["text/html"]).encode(), limits)
        return escape_markdown(page.text)
    if "text/markdown" in sized:
        return escape_markdown(_string(sized["text/markdown"]))
    return _text_block(sized.get("text/plain"))


def _picture(encoded: str, figures: Figures) -> str:
    """A picture output's block, as the picture pipeline describes it."""
    try:
        picture = base64.b64decode(encoded)
    except (binascii.Error, ValueError):
        return ""
    return figures.add(picture, None, "")


def _text_block(value: object) -> str:
    """A stream's or a result's text in fences; ``""`` for none, or one over the size."""
    if _length(value) > MAX_OUTPUT_CHARS:
        return ""
    text = _ANSI.sub("", _string(value)).strip("\n")
    return _fenced(text, "") if text.strip() else ""


def _length(value: object) -> int:
    """The length of an nbformat string (a string, or a list of lines) without joining it."""
    if isinstance(value, list):
        return sum(len(item) for item in value if isinstance(item, str))
    return len(value) if isinstance(value, str) else 0


def _fenced(code: str, language: str) -> str:
    """``code`` between fences longer than any run of backticks in it."""
    if not code.strip():
        return ""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def _string(value: object) -> str:
    """nbformat's multi-line strings: a string, or a list of lines to join."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(item for item in value if isinstance(item, str))
    return ""
