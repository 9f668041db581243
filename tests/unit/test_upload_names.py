"""File names of uploads in every script: browsers send UTF-8 in ``filename=`` (some also
``filename*=UTF-8''…``, RFC 5987/8187); each file is stored under its own name, made safe."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from knowhub.interfaces.http.console.disposition import Disposition, parse_disposition
from knowhub.interfaces.http.console.uploads import (
    MAX_NAME_BYTES,
    Upload,
    UploadLimits,
    receive,
    safe_name,
)
from tests.helpers import finishes
from tests.upload_helpers import BOUNDARY, disposition, multipart


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


def _receive(folder: Path, header: bytes, data: bytes = b"# Note\n\ntext\n") -> Upload:
    return _receive_all(folder, [(header, data)])


def _receive_all(
    folder: Path, parts: list[tuple[bytes, bytes]], extensions: tuple[str, ...] = (".md",)
) -> Upload:
    sent = asyncio.run(
        receive(
            f"multipart/form-data; boundary={BOUNDARY}",
            _once(multipart(parts)),
            lambda fields: folder,
            UploadLimits(10_000, 1 << 20, list(extensions)),
        )
    )
    sent.release()  # no job record to wait for here
    return sent


@pytest.mark.parametrize(
    "name", ["报销制度.md", "Отчёт.md", "café.md", "😀 notes.md", "تقرير.md", "नमस्ते.md"]
)
def test_a_utf8_file_name_is_stored_under_that_name(tmp_path: Path, name: str) -> None:
    sent = _receive(tmp_path, disposition("files", name))
    assert [(r.sent_as, r.path.name) for r in sent.received] == [(name, name)]
    assert (tmp_path / name).read_bytes() == b"# Note\n\ntext\n"


FILES = b'form-data; name="files"; '


@pytest.mark.parametrize(
    ("params", "stored"),
    [
        # filename* wins over filename (the fallback for old servers)
        (b"filename=\"x.md\"; filename*=UTF-8''%E6%8A%A5%E9%94%80.md", "报销.md"),
        (b"filename*=utf-8'zh'%E6%8A%A5%E9%94%80.md", "报销.md"),
        (b"filename*=ISO-8859-1''caf%E9.md", "café.md"),
        (b"filename*=latin-1''caf%E9.md", "café.md"),  # an alias, as codecs names it
        # an unknown charset or broken percent-encoding: the plain filename is used
        (b"filename=\"plain.md\"; filename*=KOI9-X''%E6.md", "plain.md"),
        (b"filename=\"plain.md\"; filename*=UTF-8''%E6%ZZ.md", "plain.md"),
        (b"filename=\"plain.md\"; filename*=UTF-8''%FF.md", "plain.md"),
        # ... and without one, the encoded text itself, as it came
        (b"filename*=UTF-8''%E6%ZZ.md", "%E6%ZZ.md"),
        # an old client's Latin-1 bytes
        (b'filename="caf\xe9.md"', "café.md"),
        # a quoted quote, and a Windows path (the last component is kept)
        (b'filename="say \\"hi\\".md"', "say _hi_.md"),
        (b'filename="C:\\Users\\me\\notes.md"', "notes.md"),
        (b"filename=bare.md", "bare.md"),
        (b'FileName="Upper.md"', "Upper.md"),
        (b'filename="semi;colon.md"', "semi;colon.md"),
    ],
)
def test_the_name_in_content_disposition_is_read_as_browsers_send_it(
    tmp_path: Path, params: bytes, stored: str
) -> None:
    sent = _receive(tmp_path, FILES + params)
    assert [r.path.name for r in sent.received] == [stored]


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("evil\u202egpj.md", "evil_gpj.md"),  # a right-to-left override cannot disguise it
        ("a\u2066b\u2069.md", "a_b_.md"),
        ("c1\x85ctl.md", "c1_ctl.md"),
        ("e\u0301.md", "\u00e9.md"),  # combining marks composed (NFC)
        ("👨\u200d👩\u200d👧.md", "👨\u200d👩\u200d👧.md"),  # a joined emoji stays whole
    ],
)
def test_bidirectional_and_c1_controls_are_replaced(sent: str, kept: str) -> None:
    assert safe_name(sent) == kept


@pytest.mark.parametrize("char", ["报", "😀", "é", "x"])
def test_a_long_name_fits_the_file_system_in_bytes(tmp_path: Path, char: str) -> None:
    name = safe_name(char * 400 + ".md")
    assert len(name.encode()) <= MAX_NAME_BYTES and name.endswith(".md")
    sent = _receive(tmp_path, disposition("files", char * 400 + ".md"))
    assert [r.path.name for r in sent.received] == [name]


# Shapes that sent the old pattern-based parser into super-linear backtracking: at 4 kB of a
# part with no "=" it took 3.5 s, at 10 kB 27 s (cubic), so at 1 MB it would take months.
HOSTILE = [
    "form-data; " + "a" * (1 << 20) + " x",  # a part with no "=" (and no ";")
    "form-data; " + " " * (1 << 20) + "x",
    "form-data; " + "; " * (1 << 19),
    "form-data; " + "=" * (1 << 20),
    'form-data; filename="' + "\\" * (1 << 20),  # an unterminated quote of escapes
    "form-data; name=" + '"a"' * (1 << 18),
]
HOSTILE_SCRIPT = """
from knowhub.interfaces.http.console.disposition import parse_disposition
from tests.unit.test_upload_names import HOSTILE
for value in HOSTILE:
    parse_disposition(value.encode())
print("parsed", len(HOSTILE))
"""


def test_content_disposition_is_read_in_time_linear_in_its_size() -> None:
    done = finishes(HOSTILE_SCRIPT)
    assert done.returncode == 0 and f"parsed {len(HOSTILE)}" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("value", "name", "filename"),
    [
        (b'form-data; name="files"; junk; filename="a.md"', "files", "a.md"),
        (b'form-data; name = "files" ; filename = "a b.md" ', "files", "a b.md"),
        (b'form-data; name="files"; filename="unterminated.md', "files", "unterminated.md"),
        (b'form-data; name="x"; name="y"', "x", None),  # the first of a repeated key counts
        (b"form-data", "", None),
    ],
)
def test_content_disposition_parameters_are_read_whatever_surrounds_them(
    value: bytes, name: str, filename: str | None
) -> None:
    assert parse_disposition(value) == Disposition(name, filename)


@pytest.mark.parametrize(
    ("name", "second"),
    [("README.md.gz", "README-1.md.gz"), ("notes.md", "notes-1.md"), ("NEWS.gz", "NEWS-1.gz")],
)
def test_a_second_file_of_one_name_is_numbered_before_its_whole_suffix(
    tmp_path: Path, name: str, second: str
) -> None:
    # README.md-1.gz would be read as a file of type .md-1, not as Markdown.
    sent = _receive_all(tmp_path, [(disposition("files", name), b"# Note\n")] * 2, (".md", ".gz"))
    assert [r.path.name for r in sent.received] == [name, second]
