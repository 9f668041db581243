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
        ("tar -? and curl -#", {"-?", "-#"}),
        ("tar \u2014list", {"--list"}),  # "--" autocorrected to an em dash
        ("grep \u2212c", {"-c"}),  # groff's minus, pasted from a rendered page
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
        ("tar(1) > OPTIONS > -?, --help", {"-?", "--help"}),
        ("curl(1) > OPTIONS > -#, --progress-bar", {"-#", "--progress-bar"}),
        # Commas inside an argument list are not between options.
        ("man(1) > -m system[,...], --systems=system[,...]", {"-m", "--systems"}),
        ("sort(1) > -k, --keys k,k,...", {"-k", "--keys"}),
        ("x(1) > \u2010t, \u2010\u2010list", {"-t", "--list"}),  # groff's hyphens
        ("ls(1) > -1", {"-1"}),
        ("Storage > -20 \u00b0C freezer", set()),  # a number, not an option
        ("tar(1) > DESCRIPTION", set()),
        ("Guide > Using -x safely", set()),  # a heading that mentions one defines none
        ("Flags and -v", set()),
        ("Notes > - a list item", set()),
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
    6: "tar(1) > OPTIONS > -C, --directory=DIR",  # the entry's second chunk
    7: "gcloud compute ssh(1) > FLAGS > --zone=ZONE",
}
FUSED = [(1, 0.9), (2, 0.7), (4, 0.5), (6, 0.45), (5, 0.4), (3, 0.2), (7, 0.1)]


def test_the_named_page_entries_defining_the_option_come_first_in_fused_order() -> None:
    ordered, moved = defining_first(FUSED, PATHS, "tar -C")
    assert moved == 2
    assert [item for item, _ in ordered] == [6, 3, 1, 2, 4, 5, 7]  # ls's -C stays; -c differs
    scores = [score for _, score in ordered]
    assert scores == sorted(scores, reverse=True) and scores[:3] == [0.9, 0.9, 0.9]


def test_a_page_named_by_several_words_needs_them_all() -> None:
    assert defining_first(FUSED, PATHS, "gcloud compute ssh --zone")[1] == 1
    assert defining_first(FUSED, PATHS, "gcloud ssh --zone")[1] == 0


@pytest.mark.parametrize(
    "query",
    [
        "tar -x",  # no entry defines it
        "tar directory",  # no option named
        "what is -C",  # no page named: which -C is meant?
        "git commit -m message",  # another command's option: ls's and tar's -m are no answer
        "",
    ],
)
def test_nothing_moves_when_no_heading_defines_an_option_asked(query: str) -> None:
    assert defining_first(FUSED, PATHS, query) == (FUSED, 0)
