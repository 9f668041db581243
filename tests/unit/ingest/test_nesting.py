"""Deeply nested input costs work linear in its size, and what nests past any page meant for
reading fails with its reason, never a RecursionError.

Work is counted in lines of Python run (``sys.settrace``), which the machine's load does not
change: input four times the size must cost at most a little over four times the work."""

from __future__ import annotations

import inspect
import io
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.html_tree import parse_html

Writer = Callable[[str, bytes], Path]


def _work(path: Path) -> int:
    """Lines of Python run to load ``path`` (bs4's and ours alike)."""
    lines = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += event == "line"
        return trace

    load(path)  # imports and caches warmed outside the count
    sys.settrace(trace)
    try:
        load(path)
    finally:
        sys.settrace(None)
    return lines


def _refusal(path: Path) -> str:
    """The message ``path`` fails to load with."""
    with pytest.raises(LoaderError) as info:
        load(path)
    return str(info.value)


def _page(body: str) -> bytes:
    return f"<html><body>{body}<p>The end.</p></body></html>".encode()


# Each builds a page whose size grows with n: nesting, and the same element many times.
PAGES: dict[str, Callable[[int], str]] = {
    "nested divs": lambda n: "<div>" * n + "Deep text." + "</div>" * n,
    "text after each nested end tag": lambda n: "<div>" * n + "x" + "</div>y" * n,
    "nested lists": lambda n: "<ul><li>item" * (n // 2),
    "nested tables": lambda n: "<table><tr><td>cell" * (n // 3),
    "navigation-like blocks": lambda n: "<div>" * n + "Next: <a href='a.html'>A</a>",
    "paragraphs without end tags": lambda n: "<p>Paragraph text." * n,
    "list items without end tags": lambda n: "<ul>" + "<li>Item text." * n + "</ul>",
    "sibling blocks": lambda n: "<div><p>Some <b>bold</b> text.</p></div>\n" * n,
    "line breaks": lambda n: "<p>" + "A line.<br>" * n + "</p>",
    "scripts among text": lambda n: "<div>" + "<p>Kept.</p><script>x()</script>" * n,
    "link bars among text": lambda n: "<div>" + "<p>Kept.</p><p>Next: <a href='a'>A</a></p>" * n,
}


@pytest.mark.parametrize("kind", list(PAGES))
def test_html_work_grows_linearly_with_its_size(write: Writer, kind: str) -> None:
    small = _work(write("small.html", _page(PAGES[kind](100))))
    large = _work(write("large.html", _page(PAGES[kind](400))))
    assert large < 4.6 * small, (kind, small, large)  # quadratic: ~16 times


# Pages that end in markup never closed, nothing after it: how the stdlib parser ends a page.
UNCLOSED: dict[str, Callable[[int], str]] = {
    "start tags": lambda n: "<a b=" * n,
    "quoted attributes": lambda n: "<a b='" * n,
    "comments": lambda n: "<!--" * n,
    "end tags": lambda n: "</" * n,
    "declarations": lambda n: "<![CDATA[" * n,
}


@pytest.mark.parametrize("kind", list(UNCLOSED))
def test_html_ending_in_unclosed_markup_is_read_in_one_step(
    write: Writer, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stdlib parser ends a page by reading each '<' that starts nothing complete as
    text, after scanning the rest of the page for its end (in C: no line of Python shows
    it): quadratic in their count. Counted here in the text pieces it hands on, one per
    scan: the same for 300 of them as for 3,000."""
    from bs4 import BeautifulSoup

    pieces = 0
    handle_data = BeautifulSoup.handle_data

    def counted(self: BeautifulSoup, data: str) -> None:
        nonlocal pieces
        pieces += 1
        handle_data(self, data)

    monkeypatch.setattr(BeautifulSoup, "handle_data", counted)
    counts = []
    for n in (300, 3000):
        pieces = 0
        load(write("page.html", f"<p>Text.</p>{UNCLOSED[kind](n)}".encode()))
        counts.append(pieces)
    assert counts[1] == counts[0] < 10, counts


def test_html_nested_past_what_browsers_show_fails_naming_the_depth(write: Writer) -> None:
    path = write("deep.html", _page("\n<div>" * 5000 + "Deep." + "</div>" * 5000))
    assert _refusal(path) == (
        f"{path}: nests elements more than 512 deep (at line 512): no page meant for reading "
        "nests so deep (browsers stop nesting at 512); close its elements, or convert it to text"
    )


def test_html_optional_end_tags_end_their_items(write: Writer) -> None:
    page = "<ul><li>One<li>Two<li>Three</ul><p>First<p>Second<dl><dt>Term<dd>Meaning</dl>"
    assert load(write("tags.html", _page(page))).text == (
        "- One\n- Two\n- Three\n\nFirst\n\nSecond\n\nTerm\n\nMeaning\n\nThe end."
    )


def test_html_of_many_items_without_end_tags_keeps_each_item(write: Writer) -> None:
    page = "<ol>" + "".join(f"<li>Step {n}" for n in range(3000)) + "</ol>"
    text = load(write("steps.html", _page(page))).text
    assert text.split("\n")[:2] == ["- Step 0", "- Step 1"]
    assert text.count("\n- Step") == 2999


def test_html_table_in_a_cell_is_that_cells_text(write: Writer) -> None:
    page = "<table><tr><td>Tier</td><td><table><tr><td>gold</td>\n<td>90</td></tr></table></td>"
    assert load(write("cells.html", _page(page + "</tr></table>"))).text == (
        "| Tier | gold 90 |\n| --- | --- |\n\nThe end."
    )


def test_html_as_deep_as_allowed_loads_without_recursing(write: Writer) -> None:
    """Nothing recurses per level: a page nested as deep as allowed loads with little stack
    to spare (a server's worker threads run deeper in theirs)."""
    path = write("deep.html", _page("<div>" * 500 + "Deep text." + "</div>" * 500))
    load(path)  # imports done with the usual limit
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 100)
    try:
        text = load(path).text
    finally:
        sys.setrecursionlimit(previous)
    assert text == "Deep text.\n\nThe end."


def test_json_nested_past_what_python_reads_fails_naming_the_nesting(write: Writer) -> None:
    path = write("deep.json", b"[" * 100_000 + b"]" * 100_000)
    assert _refusal(path) == (
        f"{path}: nests arrays and objects deeper than Python's JSON reader goes (about "
        "1000 levels): flatten it"
    )


def test_markdown_front_matter_nested_too_deep_is_not_read(write: Writer) -> None:
    text = "---\ntags: " + "[" * 5000 + "]" * 5000 + "\nowner: ops\n---\n\n# Backups\n\nNightly.\n"
    document = load(write("notes.md", text.encode()))
    assert document.title == "Backups" and "Nightly." in document.text
    assert document.metadata == {}


def test_html_tree_links_its_elements_as_beautifulsoup_does() -> None:
    """The parse skips a walk of bs4's that finds nothing: the tree it builds is bs4's."""
    from bs4 import BeautifulSoup

    page = (
        "<html><head><title>T</title></head><body><div><p>One <b>two</b> three</p>tail"
        "<ul><li>a</li><li>b <i>c</i></li></ul>after<!-- note --><div><div>x</div>y</div>z"
        "<table><tr><td>1</td><td>2</td></tr></table>end</div>last</body></html>"
    )
    # parse_html ends every page with an empty comment (see _END in html_tree.py).
    ours, theirs = parse_html(page), BeautifulSoup(page + "<!---->", "html.parser")
    assert str(ours) == str(theirs)
    assert _links(ours) == _links(theirs)


def _links(soup: Any) -> list[tuple[str, ...]]:
    """Each node with the nodes its links lead to, in document order."""
    nodes = [soup, *soup.descendants]
    name = {
        id(node): f"{index}:{getattr(node, 'name', None) or str(node)}"
        for index, node in enumerate(nodes)
    }
    fields = ("next_element", "previous_element", "next_sibling", "previous_sibling", "parent")
    return [
        (name[id(node)], *(name.get(id(getattr(node, f)), "-") for f in fields)) for node in nodes
    ]


def test_a_docx_nested_past_the_xml_readers_limit_is_not_called_corrupt(write: Writer) -> None:
    """libxml2 (lxml, under python-docx) reads 256 levels at most, and bounds the cost so:
    the file fails saying that, not that it is corrupt."""
    from docx import Document

    buffer = io.BytesIO()
    Document().save(buffer)
    with zipfile.ZipFile(buffer) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    head, tail = parts["word/document.xml"].split(b"<w:body>")
    body = b"<w:p><w:r><w:t>Deep.</w:t></w:r></w:p>"
    deep = b"<w:sdt><w:sdtContent>" * 300 + body + b"</w:sdtContent></w:sdt>" * 300
    parts["word/document.xml"] = head + b"<w:body>" + deep + tail
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    path = write("deep.docx", packed.getvalue())
    assert _refusal(path) == (
        f"{path}: nests XML elements deeper than 256 levels, past what its reader goes: no "
        "document nests so deep; re-save it from its application"
    )


def test_html_anchors_never_closed_do_not_nest(write: Writer) -> None:
    """Old pages leave ``<a name=…>`` open: a browser closes one where the next starts
    (``<nobr>`` likewise), so 600 sections are 600 siblings, not 600 levels (refused)."""
    page = "".join(f"<a name=t{n}><h2>T {n}</h2><p>text {n}<nobr>x<nobr>y" for n in range(600))
    document = load(write("anchors.html", _page(page)))
    assert document.warnings == ()
    assert document.text.count("text") == 600 and "599" in document.text
    assert _depth(parse_html(_page(page).decode())) == 5  # html, body, a, p, nobr


def _depth(soup: Any) -> int:
    """How deep the deepest element of ``soup`` nests (the document itself not counted)."""
    deepest, stack = 0, [(child, 1) for child in soup.contents]
    while stack:
        node, depth = stack.pop()
        if hasattr(node, "contents"):
            deepest = max(deepest, depth)
            stack += [(child, depth + 1) for child in node.contents]
    return deepest
