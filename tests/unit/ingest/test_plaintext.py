"""Sections of plain text found by layout alone (loaders/plaintext.py, loaders/manpage.py):
what is a heading, at which level, and the many look-alikes that must stay text. Real man
pages rendered by man(1) are in tests/integration/test_ingest_man_pages.py."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.manpage import strip_terminal_formatting
from knowhub.ingest.loaders.plaintext import text_structure

Writer = Callable[[str, bytes], Path]


def _outline(text: str) -> list[tuple[int, str]]:
    return [(h.level, h.title) for h in text_structure(text).headings]


def _paths(text: str, write: Writer) -> list[str]:
    document = load(write("doc.txt", text.encode()))
    return [c.section_path for c in chunk_document(document, "0" * 64, ChunkingOptions())]


# --- underlined titles (Setext, reStructuredText) ----------------------------------------


def test_setext_titles_are_headings_by_order_of_their_underline() -> None:
    text = (
        "Backup Guide\n============\n\nBackups run nightly.\n\n"
        "Restoring\n---------\n\nStop the service first.\n\n"
        "Verifying\n---------\n\nCompare the checksums.\n"
    )
    structure = text_structure(text)
    assert _outline(text) == [(1, "Backup Guide"), (2, "Restoring"), (2, "Verifying")]
    assert structure.headings[1].char_start == text.index("Restoring")
    assert structure.title == "Backup Guide"  # it opens the file


def test_over_and_underlined_titles_as_rst_writes_them(write: Writer) -> None:
    text = "=======\nManual\n=======\n\nIntro.\n\nInstall\n~~~~~~~\n\nRun the installer.\n"
    assert _outline(text) == [(1, "Manual"), (2, "Install")]
    assert _paths(text, write)[-1] == "Manual > Install"


# --- numbered titles -----------------------------------------------------------------------


def test_numbered_titles_nest_by_the_depth_of_their_number(write: Writer) -> None:
    text = (
        "Design notes\n\n1. Introduction\n\nWhy the service exists.\n\n"
        "2. Scope\n\n2.1 In scope\n\nBackups and restores.\n\n"
        "2.2. Out of scope\n\nArchiving.\n\n2.2.1 Tape\n\nNot supported.\n\n"
        "3. Limits\n\nTen terabytes.\n"
    )
    assert _outline(text) == [
        (1, "1. Introduction"),
        (1, "2. Scope"),
        (2, "2.1 In scope"),
        (2, "2.2. Out of scope"),
        (3, "2.2.1 Tape"),
        (1, "3. Limits"),
    ]
    assert text_structure(text).title == "Design notes"  # an obvious first line
    paths = _paths(text, write)
    assert "2. Scope > 2.2. Out of scope > 2.2.1 Tape" in paths
    assert paths[-1] == "3. Limits"


def test_numbered_titles_nest_under_the_underlined_title_before_them() -> None:
    text = "Runbook\n=======\n\n1. Alerts\n\nPage the on-call.\n\n1.1 Disk full\n\nGrow it.\n"
    assert _outline(text) == [(1, "Runbook"), (2, "1. Alerts"), (3, "1.1 Disk full")]


# --- man pages --------------------------------------------------------------------------------

MAN_PAGE = textwrap.dedent(
    """\
    BACKUP(1)                    User Commands                   BACKUP(1)

    NAME
           backup - copy files to the vault

    SYNOPSIS
           backup [OPTION]... [FILE]...

    OPTIONS
       Selection
           These options choose what is copied.

           -a, --all
                  copy hidden files too

           -x     stay on one file system; with -a, also
                  copy the mount points themselves

           --help display this help and exit

           The SIZE argument is an integer and optional unit.

    SEE ALSO
           restore(1)

    backup 1.0                     May 2024                      BACKUP(1)
    """
)


def test_man_page_sections_subsections_and_option_entries() -> None:
    structure = text_structure(MAN_PAGE)
    assert _outline(MAN_PAGE) == [
        (1, "backup(1)"),  # the page's name heads every path
        (2, "NAME"),
        (2, "SYNOPSIS"),
        (2, "OPTIONS"),
        (3, "Selection"),
        (4, "-a, --all"),
        (4, "-x"),
        (4, "--help"),
        (3, "Selection"),  # the text after the entries is the subsection's own again
        (2, "SEE ALSO"),
    ]
    assert structure.title == "backup - copy files to the vault"
    assert structure.body_start == MAN_PAGE.index("NAME")  # the header line is no chunk


@pytest.mark.parametrize(
    ("page", "root"),
    [
        (MAN_PAGE, "backup(1)"),
        # The NAME line's first command, with the header's section.
        (MAN_PAGE.replace("backup - copy", "backup, bk - copy"), "backup(1)"),
        (MAN_PAGE.split("\n", 1)[1], "backup"),  # no header line
        (MAN_PAGE.replace("NAME", "NAMES"), "backup(1)"),  # no NAME section: the header's
        # Headers are truncated and spaced where NAME lines are not: NAME wins.
        (MAN_PAGE.replace("backup - copy", "backup-to-the-vault - copy"), "backup-to-the-vault(1)"),
        (MAN_PAGE.replace("backup - copy", "gcloud vault copy - copy"), "gcloud vault copy(1)"),
        (
            MAN_PAGE.replace("BACKUP(1)", "VAULT BACKUP(1)").replace("NAME", "NAMES"),
            "vault backup(1)",
        ),
        # A NAME line that is no list of names: the header's.
        (MAN_PAGE.replace("backup - copy files", "The tool that copies files"), "backup(1)"),
    ],
)
def test_a_man_page_paths_start_at_the_page_name(page: str, root: str) -> None:
    assert _outline(page)[0] == (1, root)
    assert {level for level, _ in _outline(page)[1:]} == {2, 3, 4}


def test_each_option_entry_is_a_chunk_cited_by_its_option(write: Writer) -> None:
    document = load(write("backup.txt", MAN_PAGE.encode()))
    chunks = chunk_document(document, "0" * 64, ChunkingOptions())
    by_path = {c.section_path: c for c in chunks}
    assert chunks[0].section_path == "backup(1) > NAME"
    entry = by_path["backup(1) > OPTIONS > Selection > -a, --all"]
    assert entry.text == "-a, --all\n              copy hidden files too"
    assert entry.line_start == MAN_PAGE[: MAN_PAGE.index("-a, --all")].count("\n") + 1
    assert by_path["backup(1) > OPTIONS > Selection"].text.startswith("The SIZE argument")
    assert "BACKUP(1)" not in chunks[0].text


def test_a_man_page_saved_with_its_overstrikes_reads_as_the_terminal_shows_it(
    write: Writer,
) -> None:
    bold = "".join(f"{c}\b{c}" for c in "NAME")
    underlined = "".join(f"_\b{c}" for c in "FILE")
    raw = MAN_PAGE.replace("NAME", bold).replace("[FILE]", f"[{underlined}]")
    document = load(write("backup.txt", raw.encode()))
    assert document.text == MAN_PAGE  # the same lines, so line numbers hold
    assert [h.title for h in document.headings][:3] == ["backup(1)", "NAME", "SYNOPSIS"]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("N\bNA\bAM\bME\bE", "NAME"),  # bold
        ("_\bf_\bi_\bl_\be", "file"),  # underline
        ("_\bx\bx", "x"),  # both
        ("\u2010\b\u2010-", "\u2010-"),  # any character, not only ASCII
        ("\x1b[1mNAME\x1b[0m and \x1b[4mfile\x1b[24m", "NAME and file"),  # SGR
        ("\x1b]8;;man:tar(1)\x1b\\tar\x1b]8;;\x1b\\", "tar"),  # groff 1.23's hyperlinks
        ("a\n\bb", "a\nb"),  # a stray backspace never joins lines
    ],
)
def test_terminal_formatting_is_removed_within_lines(raw: str, shown: str) -> None:
    assert strip_terminal_formatting(raw) == shown


# --- what stays text --------------------------------------------------------------------------

LOOK_ALIKES = {
    "prose": (
        "Backups run every night at two.\nThey are kept for thirty days\n\n"
        "Restores take an hour\n\nThe end.\n"
    ),
    "a tight numbered list": "Steps\n\n1. Install the package\n2. Run the server\n3. Open it\n",
    "a list after a lead-in": (
        "To restore:\n\n1. Stop the service\n\nWait for it.\n\n2. Copy it back\n\nDone.\n"
    ),
    "list items with their own lines": (
        "Notes\n\n1. Download the package\n   from the site.\n\n"
        "2. Install it\n   with the installer.\n"
    ),
    "numbered clauses wrapped onto the next line": (
        "Leave\n\n1. Annual leave\n\nTwenty days.\n\n"
        "1.1. Unpaid leave is granted on request of\nthe employee, up to ten days.\n"
    ),
    "numbered sentences": "1. Stop the service.\n\nIt takes a minute.\n\n2. Restart it.\n\nOk.\n",
    "a list with no text between items": "Plan\n\n1. Backups\n\n2. Restores\n\n3. Drills\n",
    "numbering that does not follow": "3. Cats\n\nThey purr.\n\n7. Dogs\n\nThey bark.\n",
    "a single numbered line": "1. Overview\n\nThe service copies files.\n",
    "figures, not numbers": "Growth\n\n3.5 Million users\n\nup from two.\n\n4.2 Billion\n\nrows\n",
    "a line in capitals inside a paragraph": (
        "Read the notice\nIMPORTANT NOTICE\nbefore you start.\n\n"
        "THE SOFTWARE IS PROVIDED AS IS, WITHOUT WARRANTY\nOF ANY KIND.\n"
    ),
    "one capitalised line over indented text": "NOTE\n    Backups are encrypted.\n\nEnd.\n",
    "a grid table": (
        "Tiers\n\n+------+-------+\n| Tier | Days  |\n+======+=======+\n| gold | 90    |\n"
        "+------+-------+\n"
    ),
    "a table ruled above and below its header": (
        "\n------------------\n Tier  |  Days\n------------------\n gold  |  90\n"
    ),
    "a ruled header row": "Tier    Days\n------------\n\ngold    90\nsilver  30\n",
    "a simple table": "=====  =====\nTier   Days\n=====  =====\ngold   90\n=====  =====\n",
    "a one-column table": "Name\n----\nalice\nbob\n",
    "a rule between paragraphs": "First part.\n\n----------\n\nSecond part.\n\n**********\n",
    "a sentence over a rule": "We are done here.\n-----------------\n\nBye.\n",
    "code": (
        "Example\n\n    def restore():\n        return 1\n    ----------\n\nx = 1\n--\n\ny = 2\n"
    ),
    "a heading-like line in markdown style": "# not markdown\nbuy milk\n",
}


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_text_that_only_looks_structured_has_no_headings(name: str) -> None:
    assert _outline(LOOK_ALIKES[name]) == []


# manpages-zh's chattr(1) as `man -l chattr.1.gz | col -b` saves it: section titles with
# their translation in brackets, leading spaces turned into tabs.
ZH_PAGE = (
    "CHATTR(1)\t\t    General Commands Manual\t\t     CHATTR(1)\n"
    "\n"
    "NAME(名称)\n"
    "       chattr - 修改 Linux 文件系统上的文件属性\n"
    "\n"
    "SYNOPSIS(概要)\n"
    "       chattr [ -RVf ] [ -v 版本 ] [ mode ] files...\n"
    "\n"
    "OPTIONS(选项)\n"
    "       -R     递归地修改目录以及其下内容的属性。遇到符号链接时不会\n"
    "\t      跟随。\n"
    "\n"
    "       -v version\n"
    "\t      设置文件的版本号。\n"
    "\n"
    "SEE ALSO(参见)\n"
    "       lsattr(1)\n"
)


def test_a_man_page_with_translated_section_titles_keeps_its_entries() -> None:
    assert _outline(ZH_PAGE) == [
        (1, "chattr(1)"),
        (2, "NAME(名称)"),
        (2, "SYNOPSIS(概要)"),
        (2, "OPTIONS(选项)"),
        (3, "-R"),
        (3, "-v version"),
        (2, "SEE ALSO(参见)"),
    ]
    assert text_structure(ZH_PAGE).title == "chattr - 修改 Linux 文件系统上的文件属性"


RU_PAGE = (
    "resolv.conf(5)\t\t      File Formats Manual\t\tresolv.conf(5)\n"
    "\n"
    "ИМЯ\n"
    "       resolv.conf - файл настройки распознавателя\n"
    "\n"
    "ОПИСАНИЕ\n"
    "       Файл содержит список ключевых слов со значениями.\n"
    "\n"
    "       nameserver IP-адрес сервера имён\n"
    "\t      Может быть указано до MAXNS (в настоящее время 3) серверов\n"
    "\t      имён, повторяя каждый раз ключевое слово.\n"
    "\n"
    "       multi  Допустимые значения on и off. Если задано on, возвращаются\n"
    "\t      все адреса узла.\n"
    "\n"
    "       /proc/sys/fs/pipe-max-size (начиная с Linux 2.6.35)\n"
    "\t      Максимальный размер (в байтах) отдельных каналов.\n"
    "\n"
    "       size (bytes)  Задать максимальный размер\n"
    "                     файловой системы.\n"
    "\n"
    "       Пример настройки:\n"
    "\t      nameserver 192.0.2.1\n"
    "\n"
    "ФАЙЛЫ\n"
    "       /etc/resolv.conf\n"
)


def test_keyword_file_and_setting_entries_are_headings_as_options_are() -> None:
    # manpages-ru: what a question about "nameserver" or "pipe-max-size" needs is its entry.
    assert _outline(RU_PAGE) == [
        (1, "resolv.conf(5)"),
        (2, "ИМЯ"),
        (2, "ОПИСАНИЕ"),
        (3, "nameserver IP-адрес сервера имён"),  # described on the lines below
        (3, "multi"),  # its description starts on its line, past a gap
        (3, "/proc/sys/fs/pipe-max-size"),  # a parenthesis after the name is left out
        (3, "size"),  # also when the description starts on the name's line
        (2, "ОПИСАНИЕ"),  # prose ending in ':' opens no entry: the section's own again
        (2, "ФАЙЛЫ"),
    ]


def test_the_pages_own_commands_stay_in_the_section_that_describes_them() -> None:
    # As at(1) describes atq, atrm and batch in its DESCRIPTION (the NAME line names them).
    page = RU_PAGE.replace("ИМЯ", "NAME").replace("resolv.conf - файл", "nameserver, multi - файл")
    outline = _outline(page)
    assert (3, "/proc/sys/fs/pipe-max-size") in outline
    assert not any(title in ("nameserver IP-адрес сервера имён", "multi") for _, title in outline)
