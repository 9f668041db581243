"""Section paths of PDFs: from the outline (bookmarks) where there is one, else from
headings set larger than the body or numbered in bold; never from body text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.pdf_headings import Line, Mark, font_marks
from knowhub.models import Chunk
from tests.pdf_outlines import WQY, Section, sectioned_pdf

Writer = Callable[[str, bytes], Path]

GUIDE = [
    Section(1, "1", "Installation", "Install the Northwind server from its image. " * 6),
    Section(
        2,
        "1.1",
        "Disks",
        "Partition the disks with LVM before copying the image.\n"
        "1. Insert the installation disk.\n2 servers need a second disk each.",
    ),
    # On the same page as 1.1: the page splits where its heading stands.
    Section(2, "1.2", "Network", "The gateway address is 10.0.2.1 on the school network. " * 5),
    Section(1, "2", "Backups", "Backups run every night at two o'clock. " * 5, new_page=True),
    Section(2, "2.1", "Restoring", "Stop the service before restoring a snapshot. " * 5),
]
CHINESE = [
    Section(1, "第 1 章", "安装", "从映像安装服务器，然后重新启动计算机。" * 6),
    Section(2, "1.1", "磁盘", "复制映像之前先用 LVM 给磁盘分区。" * 5),
    Section(2, "1.2", "网络", "学校网络的网关地址是 10.0.2.1。" * 5),
    Section(1, "第 2 章", "备份", "备份每天夜里两点运行。" * 5, new_page=True),
]


def _chunks(write: Writer, sections: Sequence[Section], **options: object) -> list[Chunk]:
    path = write("guide.pdf", sectioned_pdf(sections, **options))  # type: ignore[arg-type]
    return chunk_document(load(path), "0" * 64, ChunkingOptions(size=120, overlap=0))


def _path_of(chunks: list[Chunk], phrase: str) -> str:
    return next(piece.section_path for piece in chunks if phrase in piece.text)


def test_pdf_outline_gives_each_chunk_the_path_of_its_section(write: Writer) -> None:
    chunks = _chunks(write, GUIDE, outline=True)
    assert _path_of(chunks, "Install the Northwind") == "Installation"
    assert _path_of(chunks, "Partition the disks") == "Installation > Disks"
    assert _path_of(chunks, "gateway address") == "Installation > Network"
    assert _path_of(chunks, "Stop the service") == "Backups > Restoring"


def test_pdf_outline_entry_splits_its_page_where_its_heading_stands(write: Writer) -> None:
    chunks = _chunks(write, GUIDE, outline=True)
    disks = next(piece for piece in chunks if "Partition the disks" in piece.text)
    network = next(piece for piece in chunks if "gateway address" in piece.text)
    assert disks.page == network.page == 1
    assert "gateway" not in disks.text and "second disk" not in network.text


def test_pdf_without_outline_takes_paths_from_numbered_larger_headings(write: Writer) -> None:
    chunks = _chunks(write, GUIDE, outline=False)
    assert _path_of(chunks, "Install the Northwind") == "1 Installation"
    assert _path_of(chunks, "Partition the disks") == "1 Installation > 1.1 Disks"
    assert _path_of(chunks, "gateway address") == "1 Installation > 1.2 Network"
    assert _path_of(chunks, "Stop the service") == "2 Backups > 2.1 Restoring"


def test_numbered_lines_of_body_text_are_no_headings(write: Writer) -> None:
    chunks = _chunks(write, GUIDE, outline=False)
    assert _path_of(chunks, "Insert the installation disk") == "1 Installation > 1.1 Disks"
    assert _path_of(chunks, "servers need a second disk") == "1 Installation > 1.1 Disks"


def test_pdf_set_in_one_size_and_face_gets_no_headings(write: Writer) -> None:
    flat = [Section(3, s.label, s.title, s.body, s.new_page) for s in GUIDE]
    chunks = _chunks(write, flat, outline=False, font=WQY)  # one face: no bold either
    assert {piece.section_path for piece in chunks} == {""}


def test_chinese_pdf_outline_gives_section_paths(write: Writer) -> None:
    chunks = _chunks(write, CHINESE, outline=True, font=WQY)
    assert _path_of(chunks, "网关地址") == "安装 > 网络"
    assert _path_of(chunks, "备份每天") == "备份"


def test_chinese_pdf_without_outline_takes_chapter_headings(write: Writer) -> None:
    chunks = _chunks(write, CHINESE, outline=False, font=WQY)
    assert _path_of(chunks, "给磁盘分区") == "第 1 章 安装 > 1.1 磁盘"
    assert _path_of(chunks, "备份每天") == "第 2 章 备份"


def test_table_of_contents_lines_are_no_headings() -> None:
    contents = [Line("1 Installation ..... 3", 11, True), Line("1.1 Disks 3", 11, True)]
    body = [Line("Install the server from its image, then restart it.", 11, False)] * 20
    chapter = [Line("1 Installation", 18, True), Line("1.1 Disks", 14, True), *body]
    marks = font_marks([(0, contents + body), (2, chapter)])
    assert marks == [Mark(2, 1, "1 Installation"), Mark(2, 2, "1.1 Disks")]
