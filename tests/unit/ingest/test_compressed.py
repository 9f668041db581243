"""Compressed files (``.gz``, ``.bz2``, ``.xz``): read by the name inside, within the byte
limit however far they would unpack, and named by their own name in every message."""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from knowhub.errors import LoaderError, UnsupportedFileError
from knowhub.ingest.loaders import Limits, load, unsupported_reason
from knowhub.ingest.loaders.compressed import MAX_STREAMS, decompress
from tests.helpers import gzip_of_zeros
from tests.unit.ingest.conftest import PdfMaker

Writer = Callable[[str, bytes], Path]
Compress = Callable[[bytes], bytes]
COMPRESSORS: dict[str, Compress] = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
}
FORMATS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
GUIDE = b"# Install\n\nRun make install.\n\n## Upgrade\n\nRun make upgrade.\n"
CHANGELOG = (
    b"tar (1.34+dfsg-1) unstable; urgency=medium\n\n"
    b"  * New upstream release: --zstd compresses with zstd.\n\n"
    b" -- Maintainer <m@example.org>  Sat, 05 Mar 2022 10:00:00 +0100\n"
)
MAN_SOURCE = b'.\\" Man page of tar\n.TH TAR 1 "2022" "GNU" "GNU TAR Manual"\n.SH NAME\ntar\n'


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_compressed_markdown_file_is_read_as_markdown(write: Writer, suffix: str) -> None:
    path = write(f"README.md{suffix}", COMPRESSORS[suffix](GUIDE))
    document = load(path)
    assert (document.format, document.text) == ("markdown", GUIDE.decode())
    assert [h.title for h in document.headings] == ["Install", "Upgrade"]


def test_a_compressed_file_without_a_title_is_titled_by_its_inner_stem(write: Writer) -> None:
    path = write("notes.md.gz", gzip.compress(b"just some words, no heading at all.\n"))
    assert load(path).title == "notes"


@pytest.mark.parametrize("name", ["changelog.Debian.gz", "NEWS.bz2", "notes.txt.xz"])
def test_compressed_text_without_a_format_of_its_own_is_read_as_plain_text(
    write: Writer, name: str
) -> None:
    path = write(name, COMPRESSORS[Path(name).suffix](CHANGELOG))
    document = load(path)
    assert (document.format, document.text) == ("text", CHANGELOG.decode())


def test_a_decompression_bomb_fails_at_the_byte_limit_in_bounded_memory(tmp_path: Path) -> None:
    path = gzip_of_zeros(tmp_path / "bomb.txt.gz", 256)  # 256 MB of zeros in 250 kB
    limit = 4 << 20
    tracemalloc.start()
    try:
        with pytest.raises(LoaderError) as info:
            load(path, limits=Limits(max_bytes=limit))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value) == (
        f"{path}: decompresses to more than {limit} bytes; raise ingest.max_file_bytes"
    )
    assert peak < 4 * limit, peak  # the limit, read once, not the 256 MB it would unpack to


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_every_compression_stops_at_the_byte_limit(write: Writer, suffix: str) -> None:
    path = write(f"big.md{suffix}", COMPRESSORS[suffix](b"# Big\n\n" + b"word " * 100_000))
    with pytest.raises(LoaderError, match="decompresses to more than 1000 bytes"):
        load(path, limits=Limits(max_bytes=1000))


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_corrupt_or_cut_compressed_file_fails_saying_so(write: Writer, suffix: str) -> None:
    whole = COMPRESSORS[suffix](GUIDE * 50)
    damaged = {"cut": whole[: len(whole) // 2], "garbage": b"not compressed"}
    damaged["trailing"] = whole + b"not compressed"  # bz2's and lzma's readers dropped it
    for name, data in damaged.items():
        path = write(f"{name}.md{suffix}", data)
        with pytest.raises(LoaderError) as info:
            load(path)
        assert str(info.value).startswith(f"{path}: is not a valid {FORMATS[suffix]} file (")
        assert str(info.value).endswith("): download or compress it again")


def test_a_compressed_man_page_source_is_not_read_and_says_how_to_read_it(write: Writer) -> None:
    path = write("tar.1.gz", gzip.compress(MAN_SOURCE))
    with pytest.raises(UnsupportedFileError) as info:
        load(path)
    assert info.value.problem == (
        "a manual page's roff source, which knowhub does not typeset: save the page as "
        "text (man -l tar.1.gz > tar.1.txt), which knowhub reads by its sections and options"
    )


@pytest.mark.parametrize(
    ("name", "body", "problem"),
    [
        ("tar.1.gz", MAN_SOURCE + b".PP\nThe archiver.\n" * 20_000, "a manual page's roff source"),
        ("font.pcf.xz", b"\x01fcp\x00\x00\x00\x0c" * 50_000, "decompresses to binary data"),
    ],
    ids=["man-page", "binary"],
)
def test_what_is_not_read_is_known_from_its_start_before_the_rest_is_unpacked(
    write: Writer, name: str, body: bytes, problem: str
) -> None:
    # Every man page's source and every binary was unpacked whole at each run, only to be
    # skipped: one larger than the byte limit even failed as too large.
    path = write(name, COMPRESSORS[Path(name).suffix](body))
    with pytest.raises(UnsupportedFileError) as info:
        load(path, limits=Limits(max_bytes=len(body) // 4))
    assert info.value.problem.startswith(problem)


def test_a_compressed_file_of_another_format_is_not_read_as_text(write: Writer) -> None:
    path = write("manual.ps.gz", gzip.compress(b"%!PS-Adobe-3.0\n/Times findfont\n"))
    with pytest.raises(UnsupportedFileError) as info:
        load(path)
    assert str(info.value) == f"{path}: unsupported file type .ps.gz"


def test_a_compressed_binary_is_not_read(write: Writer) -> None:
    path = write("font.pcf.gz", gzip.compress(b"\x01fcp\x00\x00\x00\x0c" * 100))
    with pytest.raises(UnsupportedFileError) as info:
        load(path)
    assert info.value.problem == "decompresses to binary data, not text"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("README.md.gz", None),
        ("changelog.Debian.gz", None),
        ("NEWS.xz", None),
        ("guide.pdf.bz2", None),
        ("style.css", "unsupported file type .css"),
        ("logo.gif", "unsupported file type .gif"),
        ("Makefile", None),  # read when it is text, as NEWS.gz is
        ("src.tar.gz", None),  # an archive: its members are read
        ("src.tgz", None),
        # A format of its own, compressed: what it would be unpacked (PostScript is text, but
        # no document text).
        ("manual.ps.gz", "unsupported file type .ps.gz"),
        ("setup.py.xz", "unsupported file type .py.xz"),
        # Qualifiers, not formats: Debian's and upstreams' documentation, read as text.
        ("changelog.Debian.amd64.gz", None),
        ("README.devmapper.gz", None),
    ],
)
def test_what_a_file_name_says_about_whether_it_is_read(name: str, reason: str | None) -> None:
    assert unsupported_reason(name) == reason


# -- several streams in one file; what unpacking may cost ---------------------------------


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_concatenated_streams_unpack_to_their_texts_in_order(write: Writer, suffix: str) -> None:
    # `gzip -c a >> f; gzip -c b >> f`, pbzip2's streams, `cat a.xz b.xz`; gzip and xz
    # allow zero padding between them (xz in fours), which lzma's reader took for the end.
    pack, padding = COMPRESSORS[suffix], b"" if suffix == ".bz2" else bytes(4)
    data = pack(b"# One\n\nfirst\n") + padding + pack(b"") + pack(b"## Two\n\nsecond\n")
    path = write(f"joined.md{suffix}", data)
    assert decompress(path, data, 1000) == b"# One\n\nfirst\n## Two\n\nsecond\n"


def test_zero_padding_between_members_is_skipped_in_a_few_steps(write: Writer) -> None:
    # gzip's reader skipped it a byte at a time in Python: 10 MB of padding, 3 s of CPU.
    data = gzip.compress(b"first\n") + bytes(1 << 20) + gzip.compress(b"second\n")
    path = write("padded.txt.gz", data)
    assert _steps(lambda: decompress(path, data, 1000)) < 1000
    assert decompress(path, data, 1000) == b"first\nsecond\n"


def test_a_file_of_too_many_members_fails_saying_so(write: Writer) -> None:
    # Each member costs a header parse whatever it holds: 500k empty ones were 6 s of CPU.
    data = gzip.compress(b"") * MAX_STREAMS + gzip.compress(b"text\n")
    path = write("many.txt.gz", data)
    with pytest.raises(LoaderError) as info:
        load(path)
    assert str(info.value) == (
        f"{path}: is made of more than {MAX_STREAMS} gzip streams, more than a document "
        "needs: unpack it and compress it again as one (zcat many.txt.gz | gzip > new.gz)"
    )


def test_an_xz_stream_asking_for_more_memory_than_allowed_fails_saying_so(
    write: Writer,
) -> None:
    # The legacy .lzma header xz reads too, declaring a 4 GiB dictionary: lzma's file reader
    # set no limit, so unpacking it was a 4 GiB allocation (MemoryError where it failed).
    packed = bytearray(lzma.compress(b"hello\n", format=lzma.FORMAT_ALONE))
    packed[1:5] = (0xFFFFFFFF).to_bytes(4, "little")
    path = write("huge-dictionary.txt.xz", bytes(packed))
    with pytest.raises(LoaderError) as info:
        load(path)
    assert str(info.value) == (
        f"{path}: needs more than 256 MiB of memory to unpack (a dictionary larger than "
        "xz -9 uses): unpack it, or compress it again with xz -9 or less"
    )


def test_unpacking_holds_the_text_once(write: Writer) -> None:
    text = b"# Big\n\n" + b"word " * (6 << 20)  # 30 MB
    data = gzip.compress(text, 1)
    path = write("big.md.gz", data)
    tracemalloc.start()
    try:
        unpacked = decompress(path, data, 1 << 30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert unpacked == text
    assert peak < 1.5 * len(text), peak  # was twice: the pieces, then their join


def _steps(call: Callable[[], object]) -> int:
    """How many Python and C function calls ``call`` makes (a count of work, not a time)."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return count


# -- the inner name decides as the name would ---------------------------------------------


def test_compressed_mdx_is_mdx(write: Writer) -> None:
    assert load(write("intro.mdx.gz", gzip.compress(GUIDE))).format == "mdx"


@pytest.mark.parametrize("name", ["page.xhtml", "page.xhtml.gz"])
def test_xhtml_is_read_as_html_compressed_or_not(write: Writer, name: str) -> None:
    page = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>Guide</title></head><body><h1>Install</h1><p>Run make.</p></body></html>"
    )
    document = load(write(name, gzip.compress(page) if name.endswith(".gz") else page))
    assert document.format == "html" and "<" not in document.text
    assert [h.title for h in document.headings] == ["Install"]


@pytest.mark.parametrize("first", [b"'em all: the 2.0 release", b"'tis the 2.0 release"])
def test_prose_opening_with_an_apostrophe_is_not_taken_for_a_roff_source(
    write: Writer, first: bytes
) -> None:
    path = write("NEWS.gz", gzip.compress(first + b"\n\nFixed the parser.\n"))
    assert load(path).text.startswith(first.decode())


def test_importing_the_loaders_reads_no_system_file_type_table() -> None:
    # mimetypes.MimeTypes() reads /etc/mime.types (and more) into the global table at once.
    code = "import mimetypes, knowhub.ingest.loaders; print(mimetypes.inited)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "False\n"), result.stderr


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_compressed_pdf_is_read_page_by_page(
    write: Writer, make_pdf: PdfMaker, suffix: str
) -> None:
    pdf = make_pdf("guide.pdf", ["Install with make install.", "Upgrade with make upgrade."])
    document = load(write(f"guide.pdf{suffix}", COMPRESSORS[suffix](pdf.read_bytes())))
    assert (document.format, len(document.page_starts)) == ("pdf", 2)
    assert document.text[document.page_starts[1] :].startswith("Upgrade with make upgrade.")
