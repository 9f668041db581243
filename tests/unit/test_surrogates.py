"""Escaping what UTF-8 cannot encode, and restoring file names from their stored form."""

from __future__ import annotations

import os

from knowhub.surrogates import (
    escape_surrogates,
    escape_surrogates_deep,
    replace_surrogates,
    restore_surrogates,
)

NAME = os.fsdecode(b"docs/caf\xe9 \xff.txt")  # "docs/caf\udce9 \udcff.txt"


def test_undecodable_name_bytes_are_escaped_and_restored() -> None:
    stored = escape_surrogates(NAME)
    assert stored == "docs/caf\\xe9 \\xff.txt"
    stored.encode("utf-8")
    assert restore_surrogates(stored) == NAME
    assert os.fsencode(restore_surrogates(stored)) == b"docs/caf\xe9 \xff.txt"


def test_ordinary_names_are_left_as_they_are() -> None:
    for name in ("guide.md", "手册/报销.md", "a\\b.txt", "odd\\x41.txt"):
        assert escape_surrogates(name) is name
        assert restore_surrogates(name) == name


def test_a_literal_escape_that_would_restore_to_valid_utf8_is_kept() -> None:
    # b"\xc3\xa9" is "é": a real name with those bytes decodes, so it was never escaped.
    assert restore_surrogates("caf\\xc3\\xa9.txt") == "caf\\xc3\\xa9.txt"


def test_other_lone_surrogates_are_written_as_unicode_escapes() -> None:
    assert escape_surrogates("a\ud800b") == "a\\ud800b"


def test_deep_escaping_reaches_keys_values_and_items() -> None:
    value = {"k\udce9": ["v\udce9", ("t\udce9", 1)], "n": None}
    assert escape_surrogates_deep(value) == {"k\\xe9": ["v\\xe9", ("t\\xe9", 1)], "n": None}


def test_text_replacement_keeps_every_offset() -> None:
    text = "a\ud800b\udce9c"
    assert replace_surrogates(text) == "a\ufffdb\ufffdc"
    assert len(replace_surrogates(text)) == len(text)
