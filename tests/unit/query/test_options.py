"""Questions naming a command-line option put the entries defining it first."""

from __future__ import annotations

import pytest

from knowhub.query.options import asked, defined, defining_first


@pytest.mark.parametrize(
    ("query", "options"),
    [
        ("grep -c", {"-c"}),
        ("tar --list", {"--list"}),
        ("what does tar -t do", {"-t"}),
        ("tar -C or -c?", {"-C", "-c"}),  # case tells options apart
        ("grep --max-count=5 file", {"--max-count"}),
        ("ls -1", {"-1"}),
        ("send an e-mail about the x-ray", set()),  # inside words: no option
        ("backups run nightly", set()),
        ("- a list item", set()),
    ],
)
def test_the_options_a_query_names(query: str, options: set[str]) -> None:
    assert asked(query) == options


@pytest.mark.parametrize(
    ("path", "options"),
    [
        ("tar(1) > DESCRIPTION > Operation mode > -t, --list", {"-t", "--list"}),
        ("grep(1) > OPTIONS > -m NUM, --max-count=NUM", {"-m", "--max-count"}),
        ("tar(1) > OPTIONS > --exclude=PATTERN", {"--exclude"}),
        ("ls(1) > DESCRIPTION > -l", {"-l"}),
        ("CLI > `--verbose`", {"--verbose"}),  # a Markdown heading in code
        ("tar(1) > DESCRIPTION", set()),
        ("Guide > Using -x safely", set()),  # a heading that mentions one defines none
        ("Flags > -v, and more", set()),
        ("", set()),
    ],
)
def test_the_options_a_heading_defines(path: str, options: set[str]) -> None:
    assert defined(path) == options


PATHS = {
    1: "tar(1) > SYNOPSIS",
    2: "ls(1) > DESCRIPTION > -C",
    3: "tar(1) > OPTIONS > -C, --directory=DIR",
    4: "tar(1) > EXAMPLES",
    5: "grep(1) > OPTIONS > -c, --count",
}
FUSED = [(1, 0.9), (2, 0.7), (4, 0.5), (5, 0.4), (3, 0.2)]


def test_entries_defining_the_option_come_first_the_named_page_before_others() -> None:
    ordered, moved = defining_first(FUSED, PATHS, "tar -C")
    assert moved == 2
    assert [item for item, _ in ordered] == [3, 2, 1, 4, 5]  # -c is another option
    scores = [score for _, score in ordered]
    assert scores == sorted(scores, reverse=True) and scores[2:] == [0.9, 0.5, 0.4]


def test_without_the_page_named_defining_entries_keep_their_fused_order() -> None:
    ordered, moved = defining_first(FUSED, PATHS, "what is -C")
    assert moved == 2 and [item for item, _ in ordered][:2] == [2, 3]


@pytest.mark.parametrize("query", ["tar -x", "tar directory", ""])
def test_nothing_moves_when_no_heading_defines_an_option_asked(query: str) -> None:
    assert defining_first(FUSED, PATHS, query) == (FUSED, 0)
