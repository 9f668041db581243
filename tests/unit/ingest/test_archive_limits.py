"""Decompression bombs and archives of too many members are refused in moments, with bounded
memory, by an error naming the archive and the setting to raise (archives built here by
Python's zipfile and tarfile; memory measured by tracemalloc; no clock is asserted)."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import ArchiveLimits, Entry, container_entries
from knowhub.ingest.loaders.archive import safe_member_name

MEMORY_BOUND = 300 << 20  # generous: the archives below would unpack to gigabytes
ZEROS = 20 << 20


def _read_all(path: Path, data: bytes, limits: ArchiveLimits | None = None) -> list[Entry]:
    return list(container_entries(path, io.BytesIO(data), limits or ArchiveLimits()))


def _peak(run: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        run()
    except LoaderError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def _zip(members: Iterator[tuple[str, bytes]], **options: object) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, **options) as archive:  # type: ignore[arg-type]
        for name, data in members:
            archive.writestr(name, data)
    return out.getvalue()


def test_a_member_of_zeros_is_refused_as_a_bomb_without_unpacking_it() -> None:
    data = _zip(iter([("zeros.txt", bytes(ZEROS)), ("ok.md", b"# Fine\n")]))
    assert len(data) < ZEROS // 100  # ~1000:1
    entries: list[Entry] = []
    peak = _peak(lambda: entries.extend(_read_all(Path("bomb.zip"), data)))
    bomb, fine = entries
    assert bomb.failed and not bomb.data
    assert "decompression bomb" in bomb.problem and "ingest.archive_max_ratio" in bomb.problem
    assert fine == Entry("ok.md", b"# Fine\n")
    assert peak < MEMORY_BOUND


def test_a_zip_declaring_10_gb_is_refused_whole_naming_the_archive_and_the_setting() -> None:
    honest = _zip(iter([("zeros.txt", bytes(ZEROS))]), allowZip64=True)
    lying = _force_zip64_size(honest, 10 << 30)
    with pytest.raises(LoaderError) as caught:
        _read_all(Path("/data/bomb.zip"), lying)
    message = str(caught.value)
    assert message.startswith("/data/bomb.zip: ")
    assert "ingest.archive_max_bytes" in message


def _force_zip64_size(data: bytes, size: int) -> bytes:
    """``data`` with its one member's uncompressed size set to ``size`` in its central
    directory (a zip64 extra field: sizes past 4 GiB need one)."""
    central = data.rfind(b"PK\x01\x02")
    header = bytearray(data[central:])
    name_length, extra_length = struct.unpack_from("<HH", header, 28)
    struct.pack_into("<II", header, 20, 0xFFFFFFFF, 0xFFFFFFFF)  # sizes: see zip64
    extra = struct.pack("<HHQQ", 0x0001, 16, size, 1 << 20)
    name_end = 46 + name_length
    rebuilt = (
        bytes(header[:30])
        + struct.pack("<H", len(extra))
        + bytes(header[32:name_end])
        + extra
        + bytes(header[name_end + extra_length :])
    )
    end = rebuilt.rfind(b"PK\x05\x06")
    tail = bytearray(rebuilt[end:])
    struct.pack_into("<I", tail, 12, end)  # the directory's new size
    return data[:central] + rebuilt[:end] + bytes(tail)


def test_a_tar_declaring_10_gb_is_refused_before_unpacking_it() -> None:
    info = tarfile.TarInfo("huge.txt")
    info.size = 10 << 30
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    data = gzip.compress(header + bytes(1 << 20))  # the rest is never reached
    with pytest.raises(LoaderError) as caught:
        _read_all(Path("bomb.tar.gz"), data)
    assert "ingest.archive_max_bytes" in str(caught.value)
    assert str(caught.value).startswith("bomb.tar.gz: ")


def test_a_tgz_of_zeros_is_refused_by_its_ratio() -> None:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for n in range(5):  # 100 MB: past the 64 MB a tar stream's ratio is measured from
            info = tarfile.TarInfo(f"zeros-{n}.txt")
            info.size = ZEROS
            archive.addfile(info, io.BytesIO(bytes(ZEROS)))
    peak_holder: list[str] = []

    def read() -> None:
        try:
            _read_all(Path("zeros.tgz"), out.getvalue())
        except LoaderError as exc:
            peak_holder.append(str(exc))
            raise

    peak = _peak(read)
    assert peak_holder and "ingest.archive_max_ratio" in peak_holder[0]
    assert peak < MEMORY_BOUND


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_an_archive_of_50000_members_is_refused_whole_with_bounded_memory(kind: str) -> None:
    names = (f"m{n}.txt" for n in range(50_000))
    if kind == "zip":
        data = _zip((name, b"x") for name in names)
    else:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w:gz") as archive:
            for name in names:
                info = tarfile.TarInfo(name)
                info.size = 1
                archive.addfile(info, io.BytesIO(b"x"))
        data = out.getvalue()
    errors: list[str] = []

    def read() -> None:
        try:
            _read_all(Path(f"many.{kind}"), data)
        except LoaderError as exc:
            errors.append(str(exc))
            raise

    peak = _peak(read)
    assert errors and "ingest.archive_max_members" in errors[0]
    assert errors[0].startswith(f"many.{kind}: ")
    assert peak < MEMORY_BOUND


def test_a_plain_tar_of_a_large_member_is_no_bomb() -> None:
    out = io.BytesIO()
    large = bytes(range(256)) * (300 << 10)  # 75 MB, stored as is: 1:1
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name in ("large.txt", "small.md"):
            info = tarfile.TarInfo(name)
            info.size = len(large) if name == "large.txt" else 3
            archive.addfile(info, io.BytesIO(large if name == "large.txt" else b"# A"))
    entries = _read_all(Path("plain.tar"), out.getvalue())
    assert [(e.name, len(e.data), e.problem) for e in entries] == [
        ("large.txt", len(large), ""),
        ("small.md", 3, ""),
    ]


def test_member_limits_are_the_settings_given() -> None:
    data = _zip(iter([("a.md", b"a" * 2000), ("b.md", b"b")]))
    big, small = _read_all(Path("x.zip"), data, ArchiveLimits(max_member_bytes=1000))
    assert big.failed and "ingest.max_file_bytes" in big.problem
    assert small.data == b"b"
    with pytest.raises(LoaderError, match="archive_max_members"):
        _read_all(Path("x.zip"), data, ArchiveLimits(max_members=1))


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("../../etc/passwd", "etc/passwd"),
        ("/abs/x.md", "abs/x.md"),
        ("a/./b/../c.md", "a/b/c.md"),
        ("C:\\win\\x.md", "win/x.md"),
        ("..", ""),
    ],
)
def test_member_names_are_made_relative_and_harmless(name: str, safe: str) -> None:
    assert safe_member_name(name) == safe


def test_a_mailbox_of_too_many_messages_is_refused_before_any_is_read(tmp_path: Path) -> None:
    import mailbox
    from email.message import EmailMessage

    box = mailbox.mbox(tmp_path / "many.mbox")
    for n in range(30):
        mail = EmailMessage()
        mail["Subject"] = f"Note {n}"
        mail.set_content("From the start: a body line that mbox escapes.")
        box.add(mail)
    box.close()
    data = (tmp_path / "many.mbox").read_bytes()
    entries = _read_all(Path("many.mbox"), data)
    assert len(entries) == 30 and entries[0].name == "1-note-0.eml"
    read: list[Entry] = []
    with pytest.raises(LoaderError, match=r"ingest\.archive_max_members"):
        read.extend(
            container_entries(Path("many.mbox"), io.BytesIO(data), ArchiveLimits(max_members=29))
        )
    assert not read
