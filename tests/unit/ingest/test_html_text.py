"""An HTML element's text parts words where a browser lays them out apart (cells, paragraphs,
any block) and joins them where it runs them together (inline markup: ``<b>fo</b>o``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from knowhub.ingest.loaders import load

Writer = Callable[[str, bytes], Path]


def _text(write: Writer, body: str) -> str:
    return load(write("page.html", f"<html><body>{body}</body></html>".encode())).text


def test_html_layout_table_keeps_its_words_apart(write: Writer) -> None:
    """libxslt's pages lay out their menu in a table in a cell: it read
    ``Functions/TypesModulesSymbolsInterfaces, constants``."""
    menu = (
        "<table><tr><td>Functions/Types</td></tr><tr><th>Modules</th></tr></table>"
        "<ul><li>Symbols</li></ul><div>Interfaces,</div><p>constants</p>"
    )
    page = f"<table><tr><td>{menu}</td><td><h2>Title</h2>Body<br>text</td></tr></table>"
    assert _text(write, page) == (
        "| Functions/Types Modules Symbols Interfaces, constants | Title Body text |\n| --- | --- |"
    )


def test_html_blocks_inside_inline_markup_keep_their_words_apart(write: Writer) -> None:
    page = "<span>one<div>two</div>three</span><ul><li><p>First</p><p>Second</p></li></ul>"
    assert _text(write, page) == "one two three\n\n- First Second"


def test_html_list_item_text_is_apart_from_its_nested_list(write: Writer) -> None:
    page = "<ul><li>Item<ul><li>Inner</li></ul>tail</li></ul>"
    assert _text(write, page) == "- Item tail\n  - Inner"


def test_html_inline_markup_does_not_split_words(write: Writer) -> None:
    page = "<p><b>fo</b>o <a href='x'>li</a>nk <code>x</code><span>y</span><em>z</em></p>"
    assert _text(write, page) == "foo link xyz"


def test_html_code_keeps_its_spacing(write: Writer) -> None:
    page = "<pre><span>def</span> f():\n    <b>return</b> 1<div>2</div></pre>"
    assert _text(write, page) == "```\ndef f():\n    return 1 2\n```"


def test_html_inline_elements_holding_blocks_keep_their_words_apart(write: Writer) -> None:
    """Old pages leave each ``<a name=…>`` open before its section: the section's blocks
    are the link's, and the link's edges lie between them and the next section's."""
    page = "".join(f"<a name=t{n}><h2>T {n}</h2><p>text {n}" for n in range(2))
    page += "</a><div>word<center>Title</center>more</div>"
    assert _text(write, page) == "T 0 text 0 T 1 text 1\n\nword Title more"
