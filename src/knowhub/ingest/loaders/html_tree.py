"""An HTML page's element tree, built at a cost bounded by its size, whatever its nesting.

BeautifulSoup on the stdlib parser keeps each element open until its end tag. HTML lets a
page leave some end tags out (``<li>one<li>two``, ``<p>one<p>two``: its "optional tags"),
so such a list came out with each item nested inside the one before, and bs4 pays for depth:
each string parsed after an end tag walks every open element above it. So a valid page of
thousands of such items, or one built to nest (200,000 ``<div>``), cost time quadratic in its
size. Here elements are closed where a browser closes them (the HTML Standard's tree
construction, simplified: :data:`_IMPLIED_ENDS`), so optional end tags nest nothing, nor do
links left open, and a page that still nests deeper than :data:`MAX_DEPTH` is refused at that
element, with its line: ten times the depth of the deepest of 2,016 documentation pages
measured (54, see docs/decisions.md), and where Chromium's parser stops nesting elements.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

__all__ = ["MAX_DEPTH", "TooDeepError", "parse_html"]

MAX_DEPTH = 512
# How often (in elements) the parse asks whether the file's time is up.
_CHECK_EVERY = 2048
# An empty comment after the page. The stdlib parser, at the end of a page, reads a '<' that
# starts no complete tag, comment or declaration as text up to the next '>', else up to the
# next '<' only, after scanning the rest of the page for the construct's end each time: a
# page ending in 20,000 "<a b=" took 5.5 s, quadratic in their count (40,000: 22 s). With a
# '>' at the end it reads them all as text in one step. A comment adds no text, and nothing
# at all to a page that ends well.
_END = "<!---->"

# Where an open element's scope ends when looking for one to close (the Standard's
# "button scope", and the element that holds a list item, a row or a cell).
_SCOPE = frozenset({"html", "table", "td", "th", "caption", "template", "button", "object"})
# The Standard's plain "in scope", where an open <a> or <nobr> is looked for.
_IN_SCOPE = _SCOPE - {"button"} | {"applet", "marquee"}
_P_CLOSERS = frozenset(
    {
        *("address", "article", "aside", "blockquote", "details", "dialog", "div", "dl"),
        *("fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr"),
        *("main", "menu", "nav", "ol", "p", "pre", "search", "section", "table", "ul"),
        *("h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd"),
    }
)
_Rule = tuple[frozenset[str], frozenset[str]]  # close the nearest of these, unless past those
_CLOSE_P: _Rule = (frozenset({"p"}), _SCOPE)
_CELLS = frozenset({"td", "th"})
_SECTIONS = frozenset({"thead", "tbody", "tfoot"})
_IMPLIED_ENDS: dict[str, tuple[_Rule, ...]] = {
    **{name: (_CLOSE_P,) for name in _P_CLOSERS},
    "li": ((frozenset({"li"}), _SCOPE | {"ul", "ol", "menu"}), _CLOSE_P),
    "dt": ((frozenset({"dt", "dd"}), _SCOPE | {"dl"}), _CLOSE_P),
    "dd": ((frozenset({"dt", "dd"}), _SCOPE | {"dl"}), _CLOSE_P),
    "tr": ((frozenset({"tr"}), _SCOPE - _CELLS | _SECTIONS),),
    "td": ((_CELLS, _SCOPE - _CELLS | {"tr"}),),
    "th": ((_CELLS, _SCOPE - _CELLS | {"tr"}),),
    **{name: ((_SECTIONS, _SCOPE - _CELLS),) for name in _SECTIONS},
    "option": ((frozenset({"option"}), _SCOPE | {"select", "datalist"}),),
    "optgroup": ((frozenset({"option", "optgroup"}), _SCOPE | {"select"}),),
    # A new link closes the open one (the Standard's "adoption agency", simplified: what is
    # open inside the old link closes with it); <nobr> likewise. Old pages leave each
    # <a name=…> open before its section: 600 sections nested 600 deep.
    "a": ((frozenset({"a"}), _IN_SCOPE),),
    "nobr": ((frozenset({"nobr"}), _IN_SCOPE),),
}


class TooDeepError(Exception):
    """The page nests elements deeper than :data:`MAX_DEPTH`, at ``line``."""

    def __init__(self, line: int | None) -> None:
        super().__init__(f"nests elements more than {MAX_DEPTH} deep (at line {line})")
        self.line = line


def parse_html(markup: str, check_time: Callable[[], None] | None = None) -> BeautifulSoup:
    """The page's tree, optional end tags closed as a browser closes them.

    Args:
        markup: the page.
        check_time: called every few thousand elements; raises to stop the parse (the
            file's time is up).

    Raises:
        TooDeepError: the page nests elements deeper than :data:`MAX_DEPTH`.
    """
    soup: BeautifulSoup = _soup_class()(markup + _END, check_time)
    return soup


@cache
def _soup_class() -> type[Any]:
    """BeautifulSoup closing elements as a browser does (bs4 is imported on first use)."""
    from bs4 import BeautifulSoup, Tag

    class BoundedSoup(BeautifulSoup):
        def __init__(self, markup: str, check_time: Callable[[], None] | None) -> None:
            self.check_time = check_time  # set first: the parse runs inside __init__
            self.started = 0
            super().__init__(markup, "html.parser")

        def handle_starttag(self, name: str, *args: Any, **kwargs: Any) -> Any:
            self.endData()  # text before the tag belongs to the element it was in
            for rule in _IMPLIED_ENDS.get(name, ()):
                _close_nearest(self, *rule)
            if len(self.tagStack) > MAX_DEPTH:
                raise TooDeepError(kwargs.get("sourceline"))
            self.started += 1
            if self.check_time is not None and self.started % _CHECK_EVERY == 0:
                self.check_time()
            return super().handle_starttag(name, *args, **kwargs)

        def _linkage_fixer(self, el: Tag) -> None:
            """bs4's, less its walk up ``el``'s ancestors for one with a next sibling: the
            parser only appends to the open element, whose ancestors are all open and have
            none yet, so the walk found nothing, at a cost of the depth for each string."""
            if el is not self.currentTag:
                super()._linkage_fixer(el)
                return
            first, child = el.contents[0], el.contents[-1]
            if child is first and el.parent is not None:
                el.next_element = child
                before = child.previous_element
                if before is not None and before is not el:
                    before.next_element = None
                child.previous_element = el
                child.previous_sibling = None
            child.next_sibling = None
            last = child._last_descendant(False) if isinstance(child, Tag) else None
            last = last or child
            last.next_element = None
            last.next_sibling = None

    return BoundedSoup


def _close_nearest(soup: BeautifulSoup, names: frozenset[str], scope: frozenset[str]) -> None:
    """Close the innermost open element named in ``names`` (and those inside it), unless an
    element of ``scope`` is met first (a list item of an outer list stays open)."""
    if not any(soup.open_tag_counter.get(name) for name in names):
        return  # none open: no walk up the open elements
    stack = soup.tagStack
    for index in range(len(stack) - 1, 0, -1):
        name = stack[index].name
        if name in names:
            while len(stack) > index:
                soup.popTag()
            return
        if name in scope:
            return
