"""What one file may cost: byte and character limits, zip bombs, non-regular files, and
file names that are not UTF-8."""

from __future__ import annotations

import io
import json
import os
import socket
import threading
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import Limits, load
from knowhub.ingest.loaders.reading import open_regular
from tests.helpers import WAIT_S

Writer = Callable[[str, bytes], Path]
PdfMaker = Callable[..., Path]

_EXTRACTS_PAST = "extracts to more than 200 characters; raise ingest.max_extracted_chars"


def _load_error(path: Path, data: bytes | None = None, limits: Limits | None = None) -> str:
    with pytest.raises(LoaderError) as info:
        load(path, data, limits)
    return str(info.value)


def _repacked(path: Path, part: str, content: bytes) -> bytes:
    """The Office file at ``path`` with ``part`` replaced by ``content``, deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in source.infolist():
            dst.writestr(item.filename, content if item.filename == part else source.read(item))
    return out.getvalue()


# --- characters -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["notes.txt", "notes.md", "notes.rst", "page.html", "t.csv"])
def test_text_past_the_character_limit_fails_naming_the_setting(write: Writer, name: str) -> None:
    path = write(name, b"word " * 100)
    assert _load_error(path, limits=Limits(max_chars=200)) == f"{path}: {_EXTRACTS_PAST}"


def test_text_within_the_character_limit_loads(write: Writer) -> None:
    assert load(write("notes.txt", b"word " * 40), limits=Limits(max_chars=200)).text


def test_legacy_encoded_text_is_bounded_too(write: Writer) -> None:
    path = write("ru.txt", "Резервные копии хранятся долго. ".encode("cp1251") * 20)
    assert _load_error(path, limits=Limits(max_chars=200)) == f"{path}: {_EXTRACTS_PAST}"


def test_json_that_renders_past_the_limit_fails(write: Writer) -> None:
    # Each leaf line repeats its whole key path: 30 short leaves under a long path.
    nested: object = list(range(30))
    for _ in range(20):
        nested = {"section": nested}
    path = write("deep.json", json.dumps(nested).encode())
    assert len(path.read_bytes()) < 400
    assert _load_error(path, limits=Limits(max_chars=200)) == f"{path}: {_EXTRACTS_PAST}"


def test_docx_past_the_character_limit_stops(docx_path: Path) -> None:
    message = _load_error(docx_path, limits=Limits(max_chars=60))
    assert message.endswith("extracts to more than 60 characters; raise ingest.max_extracted_chars")


def test_pptx_past_the_character_limit_stops(pptx_path: Path) -> None:
    assert "extracts to more than 30 characters" in _load_error(
        pptx_path, limits=Limits(max_chars=30)
    )


def test_xlsx_past_the_character_limit_stops(xlsx_path: Path) -> None:
    assert "extracts to more than 5 characters" in _load_error(
        xlsx_path, limits=Limits(max_chars=5)
    )


def test_pdf_past_the_character_limit_stops(make_pdf: PdfMaker) -> None:
    path = make_pdf("long.pdf", ["First page of the report.", "Second page of the report."])
    assert "extracts to more than 30 characters" in _load_error(path, limits=Limits(max_chars=30))


def test_a_large_text_file_is_decoded_without_extra_copies(tmp_path: Path) -> None:
    data = b"Backups run every night at two.\n" * (8 * 2**20 // 32)  # 8 MB
    tracemalloc.start()
    try:
        document = load(tmp_path / "big.txt", data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(document.text) == len(data)
    # The text itself is one copy; strip() and newline handling once made two more.
    assert peak < 1.3 * len(data), peak


# --- bytes and zip bombs ----------------------------------------------------------------


def test_office_file_unpacking_past_the_byte_limit_fails(docx_path: Path) -> None:
    with zipfile.ZipFile(docx_path) as archive:
        unpacked = sum(item.file_size for item in archive.infolist())
    limit = docx_path.stat().st_size + 1  # the file itself is within it
    assert unpacked > limit
    message = _load_error(docx_path, limits=Limits(max_bytes=limit))
    assert message == (
        f"{docx_path}: too large: unpacks to {unpacked} bytes > limit {limit}; "
        "raise ingest.max_file_bytes"
    )


@pytest.mark.parametrize("fixture", ["docx_path", "pptx_path", "xlsx_path"])
def test_office_entry_packed_like_a_zip_bomb_is_refused(
    fixture: str, request: pytest.FixtureRequest, write: Writer
) -> None:
    original: Path = request.getfixturevalue(fixture)
    with zipfile.ZipFile(original) as archive:
        part = max(archive.infolist(), key=lambda item: item.file_size).filename
    bomb = write("bomb" + original.suffix, _repacked(original, part, b" " * 4 * 2**20))
    message = _load_error(bomb)
    assert message.startswith(f"{bomb}: looks like a zip bomb: {part} unpacks 4194304 bytes")


def test_file_read_past_the_byte_limit_fails(write: Writer) -> None:
    path = write("big.txt", b"x" * 3000)
    assert _load_error(path, limits=Limits(max_bytes=2000)) == (
        f"{path}: too large: 3000 bytes > limit 2000; raise ingest.max_file_bytes"
    )


# --- what is not a regular file ---------------------------------------------------------


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    outcome: list[str] = []

    def read() -> None:
        try:
            load(fifo)
        except LoaderError as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=WAIT_S)
    if reader.is_alive():  # blocked in open() or read(): let a writer release it
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=WAIT_S)
        pytest.fail("reading a FIFO blocked")
    assert outcome == [
        f"{fifo}: is a FIFO (named pipe), not a regular file: knowhub reads only regular "
        "files; leave it out"
    ]


@pytest.mark.parametrize("kind", ["a folder", "a socket", "a character device"])
def test_what_is_not_a_regular_file_is_refused_with_its_kind(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "notes.md"
    if kind == "a folder":
        path.mkdir()
    elif kind == "a socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.close()
    else:
        path = Path(os.devnull)
    with pytest.raises(LoaderError) as info, open_regular(path):
        pass
    assert str(info.value) == (
        f"{path}: is {kind}, not a regular file: knowhub reads only regular files; leave it out"
    )


# --- names and text that UTF-8 cannot encode --------------------------------------------


def test_undecodable_file_name_gives_an_escaped_title_and_message(tmp_path: Path) -> None:
    path = tmp_path / os.fsdecode(b"caf\xe9.txt")
    path.write_bytes(b"Espresso on Fridays.\n")
    document = load(path)
    assert document.title == "caf\\xe9"
    broken = tmp_path / os.fsdecode(b"caf\xe9.pdf")
    broken.write_bytes(b"%PDF-1.4 truncated")
    message = _load_error(broken)
    assert message.startswith(str(tmp_path) + "/caf\\xe9.pdf: is not a readable PDF")
    message.encode("utf-8")  # what SQLite, JSON traces and terminals need


def test_lone_surrogate_in_json_text_becomes_a_replacement_character(write: Writer) -> None:
    document = load(write("odd.json", b'{"title": "a\\ud800b", "note": "x\\udce9y"}'))
    assert document.title == "a\ufffdb"
    assert "note: x\ufffdy" in document.text
    document.text.encode("utf-8")
