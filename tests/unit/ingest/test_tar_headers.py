"""A compressed tar is unpacked by knowhub's own bounded reader: a header tarfile would read
whole (a GNU long name, a pax record) is refused by its declared size before it is read, and
the ratio and size limits hold on the unpacked stream itself (archives built here; peak memory
measured in a process of its own)."""

from __future__ import annotations

import bz2
import io
import lzma
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import ArchiveLimits, Entry, container_entries
from tests.helpers import WAIT_S, long_name_tgz

LONG = 200 << 20  # a 200 MB name of one repeated byte: ~200 kB of gzip
MEMORY_BOUND_KB = 150 * 1024  # the interpreter and knowhub's loaders, not the name

# Reads one archive with the loaders alone and prints the process's peak RSS, then the error.
# The peak is /proc's VmHWM, this process's own: ru_maxrss would carry the peak of the test's
# worker that started it across exec (Linux keeps the old memory's high-water mark), gigabytes
# late in a run.
READ = """
import io, sys
from pathlib import Path
from knowhub.errors import LoaderError
from knowhub.ingest.loaders import ArchiveLimits, container_entries
path = Path(sys.argv[1])
try:
    with path.open("rb") as file:
        list(container_entries(Path(path.name), file, ArchiveLimits()))
    problem = "read"
except LoaderError as exc:
    problem = str(exc)
status = Path("/proc/self/status").read_text().splitlines()
print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")))
print(problem)
"""


def _header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.GNU_FORMAT)


def test_a_tgz_with_a_200_mb_long_name_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    bomb = long_name_tgz(tmp_path / "name.tar.gz", LONG)
    assert bomb.stat().st_size < 1 << 20
    result = subprocess.run(
        [sys.executable, "-c", READ, str(bomb)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert result.returncode == 0, result.stderr
    peak_kb, problem = result.stdout.strip().split("\n", 1)
    assert int(peak_kb) < MEMORY_BOUND_KB, problem
    assert problem.startswith("name.tar.gz: "), problem
    assert f"a header of {LONG:,} bytes" in problem


def _read(name: str, data: bytes, limits: ArchiveLimits | None = None) -> list[Entry]:
    return list(container_entries(Path(name), io.BytesIO(data), limits or ArchiveLimits()))


def _tar(members: dict[str, bytes], pax: bool = False) -> bytes:
    out = io.BytesIO()
    kind = tarfile.PAX_FORMAT if pax else tarfile.GNU_FORMAT
    with tarfile.open(fileobj=out, mode="w", format=kind) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_a_pax_header_over_a_megabyte_is_refused_before_it_is_read() -> None:
    data = _tar({"p" * (2 << 20) + ".md": b"# P"}, pax=True)
    with pytest.raises(LoaderError) as caught:
        _read("pax.tar", data)
    message = str(caught.value)
    assert message.startswith("pax.tar: ") and "a header of 2,097," in message
    assert "over 1,048,576" in message


def _sparse_map_tar(blocks: int) -> bytes:
    """A plain tar whose one member is an old GNU sparse file whose map goes on for
    ``blocks`` extension blocks (tarfile reads them, a block at a time, into one list)."""
    header = bytearray(_header("sparse.md", 0, tarfile.GNUTYPE_SPARSE))
    header[482] = 1  # "extended": a block of the map follows
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)  # the checksum, as tar computes it
    block = bytearray(b"00000000001\0" * 42 + bytes(8))  # 21 (offset, size) pairs
    block[504] = 1  # and another block after this one
    return bytes(header) + bytes(block) * blocks + bytes(4 * tarfile.BLOCKSIZE)


def _gnu_sparse_1_tar(fields: int, length: int) -> bytes:
    """A pax tar whose member is a GNU sparse 1.0 file: its map, ``length`` bytes of
    numbers at the start of its data, declares ``fields`` (offset, size) pairs."""
    numbers = b"%d\n" % fields + b"1\n" * ((length - 12) // 2)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("sparse.md")
        info.size = len(numbers)
        info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0"}
        archive.addfile(info, io.BytesIO(numbers))
    return out.getvalue()


@pytest.mark.parametrize(
    "data", [_sparse_map_tar(6000), _gnu_sparse_1_tar(10**9, 3 << 20)], ids=["gnu-0", "gnu-1"]
)
def test_a_sparse_map_of_megabytes_is_refused_before_it_is_read_whole(data: bytes) -> None:
    with pytest.raises(LoaderError) as caught:
        _read("sparse.tar", data)
    message = str(caught.value)
    assert message.startswith("sparse.tar: holds a header of 2,09"), message
    assert "over 1,048,576" in message


def test_a_small_sparse_map_is_read() -> None:
    (entry,) = _read("sparse.tar", _gnu_sparse_1_tar(1, 100))
    assert entry.name == "sparse.md" and not entry.problem


def test_a_sparse_map_cut_short_is_a_corrupt_archive_not_a_crash() -> None:
    # tarfile raises ValueError when the map ends before the pairs it declares.
    with pytest.raises(LoaderError) as caught:
        _read("cut.tar", _gnu_sparse_1_tar(10**9, 1000))
    assert str(caught.value).startswith("cut.tar: is not a valid tar archive (")


def test_long_names_under_the_header_bound_are_read() -> None:
    name = "d/" + "n" * 5000 + ".md"
    for pax in (False, True):
        (entry,) = _read("long.tar", _tar({name: b"# Long"}, pax=pax))
        assert entry == Entry(name, b"# Long")


COMPRESSIONS = {
    "gz": lambda data: zlib.compress(data, wbits=31),
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


@pytest.mark.parametrize("kind", sorted(COMPRESSIONS))
def test_every_compression_is_read_member_by_member(kind: str) -> None:
    members = {"a.md": b"# A\n" * 1000, "b/c.txt": bytes(range(256)) * 50}
    data = COMPRESSIONS[kind](_tar(members))
    entries = _read(f"docs.tar.{kind}", data)
    assert {e.name: e.data for e in entries} == members


def test_two_gzip_members_make_one_tar() -> None:
    whole = _tar({"a.md": b"# A", "b.md": b"# B"})
    half = len(whole) // 2
    data = zlib.compress(whole[:half], wbits=31) + zlib.compress(whole[half:], wbits=31)
    assert [e.name for e in _read("two.tgz", data)] == ["a.md", "b.md"]


def test_a_tar_xz_asking_for_a_huge_dictionary_is_refused_saying_so() -> None:
    # Its block header made to declare a 4 GiB dictionary: tarfile's xz reader set no limit.
    packed = bytearray(lzma.compress(_tar({"a.md": b"# A"})))
    size = (packed[12] + 1) * 4  # the block header, after the 12-byte stream header
    assert packed[13] == 0 and packed[14:16] == b"\x21\x01"  # no sizes; LZMA2, 1 property
    packed[16] = 40  # the dictionary size's code for 4 GiB
    packed[12 + size - 4 : 12 + size] = zlib.crc32(packed[12 : 12 + size - 4]).to_bytes(4, "little")
    with pytest.raises(LoaderError) as caught:
        _read("huge.tar.xz", bytes(packed))
    assert str(caught.value).startswith("huge.tar.xz: needs more than 256 MiB of memory")


def test_the_unpacked_stream_is_bounded_by_the_ratio_whatever_the_headers_say() -> None:
    # Members of zeros, ratio ~1000:1: refused by what the stream unpacks to.
    data = zlib.compress(_tar({f"z{n}.txt": bytes(30 << 20) for n in range(3)}), wbits=31)
    with pytest.raises(LoaderError) as caught:
        _read("zeros.tgz", data)
    assert "ingest.archive_max_ratio" in str(caught.value)
    assert str(caught.value).startswith("zeros.tgz: looks like a decompression bomb")


def test_the_unpacked_stream_is_bounded_by_the_total_with_headers_counted() -> None:
    # Ten members of 3 bytes, each under a 900 kB pax record: 9 MB that no size declares.
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for n in range(10):
            info = tarfile.TarInfo(f"m{n}.md")
            info.size, info.pax_headers = 3, {"comment": "c" * 900_000}
            archive.addfile(info, io.BytesIO(b"# M"))
    limits = ArchiveLimits(max_bytes=1_000_000, max_members=100)
    assert len(_read("fine.tgz", out.getvalue())) == 10
    with pytest.raises(LoaderError) as caught:
        _read("headers.tgz", out.getvalue(), limits)
    assert str(caught.value).startswith("headers.tgz: unpacks to more than 1,000,000 bytes")
    assert "ingest.archive_max_bytes" in str(caught.value)
