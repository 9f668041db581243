"""EPUB loader: the book's chapters in spine order, each read by the HTML loader.

container.xml names the package document (OPF): its metadata give the title, author and
language, its spine the chapters' order. Each chapter is an XHTML page rendered as the
HTML loader renders any page (page furniture dropped, tables as Markdown, pictures passed
over), and headed by its title: the table of contents' label for it (the EPUB 3 navigation
document, else the EPUB 2 NCX), else its first heading, else ``Chapter N``. A chapter whose
text does not open with that title gets it as a ``#`` heading, its own headings one level
lower, so every section path starts with the chapter's title. An EPUB is a zip: it is
checked as Office files are (sizes, ratio) before any part is read.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urldefrag
from xml.etree.ElementTree import Element

from knowhub.ingest.loaders.common import CharBudget, Limits, pick_title
from knowhub.ingest.loaders.html import load_html
from knowhub.ingest.loaders.html_tree import parse_html
from knowhub.ingest.loaders.markdown import heading_title, markdown_headings
from knowhub.ingest.loaders.zipxml import Package, local_name
from knowhub.models import LoadedDocument

__all__ = ["load_epub"]

_OPF = "http://www.idpf.org/2007/opf"
_DC = "http://purl.org/dc/elements/1.1/"
_NCX = "http://www.daisy.org/z3986/2005/ncx/"
_CONTAINER = "urn:oasis:names:tc:opendocument:xmlns:container"
_PAGES = frozenset({"application/xhtml+xml", "text/html"})
_MAX_LEVEL = 6


@dataclass(frozen=True)
class _Item:
    """A manifest entry: its path in the zip, media type and properties."""

    path: str
    media_type: str
    properties: frozenset[str]


def load_epub(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load an EPUB book as Markdown text, chapter after chapter.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_bytes`` bounds the unpacked parts, ``max_chars`` the text of all
            chapters together.

    Returns:
        The document, titled by the package's ``dc:title``, else the first chapter's
        title, else its stem; ``metadata`` holds the author, language and chapter count.

    Raises:
        LoaderError: the file is no valid EPUB (no container or package document, a part
            not well-formed), its chapters are encrypted (DRM), or it is over a limit.
    """
    package = Package(path, data, ".epub", limits)
    try:
        opf_path, opf = _package_document(package)
        manifest = _manifest(opf, posixpath.dirname(opf_path))
        spine = _spine(opf, manifest)
        _refuse_encrypted(package, spine)
        labels = _toc_labels(package, opf, manifest)
        chapters = list(_chapters(package, path, limits, spine, labels))
    finally:
        package.close()
    text = "\n\n".join(chapter for chapter, _ in chapters)
    properties = _properties(opf)
    title = properties.pop("title", None)
    return LoadedDocument(
        text=text,
        title=pick_title(path, title, chapters[0][1] if chapters else None),
        format="epub",
        headings=markdown_headings(text),
        metadata={**properties, "chapters": len(chapters)},
        line_map=None,  # the lines of XHTML inside a zip are none a reader goes to
    )


def _package_document(package: Package) -> tuple[str, Element]:
    """The OPF's path in the zip and its root, as container.xml names it."""
    container = package.xml("META-INF/container.xml")
    rootfile = None if container is None else container.find(f".//{{{_CONTAINER}}}rootfile")
    opf_path = None if rootfile is None else rootfile.get("full-path")
    opf = package.xml(opf_path) if opf_path else None
    if opf_path is None or opf is None:
        raise package.invalid("no META-INF/container.xml naming its package document")
    return opf_path, opf


def _manifest(opf: Element, base: str) -> dict[str, _Item]:
    """The manifest's items by id, their paths resolved against the OPF's folder."""
    items = {}
    for item in opf.iter(f"{{{_OPF}}}item"):
        href, ident = item.get("href"), item.get("id")
        if href and ident:
            items[ident] = _Item(
                _resolve(base, href),
                item.get("media-type", ""),
                frozenset(item.get("properties", "").split()),
            )
    return items


def _spine(opf: Element, manifest: dict[str, _Item]) -> list[str]:
    """The chapters' paths in reading order: the spine's pages, less the navigation
    document (its table of contents repeats every heading)."""
    paths = []
    for itemref in opf.iter(f"{{{_OPF}}}itemref"):
        item = manifest.get(itemref.get("idref", ""))
        if item is not None and item.media_type in _PAGES and "nav" not in item.properties:
            paths.append(item.path)
    return paths


def _refuse_encrypted(package: Package, spine: list[str]) -> None:
    """Refuse a book whose chapters are encrypted (DRM); obfuscated fonts are no matter."""
    encryption = package.xml("META-INF/encryption.xml")
    if encryption is None:
        return
    chapters = set(spine)
    for reference in encryption.iter():
        uri = unquote(reference.get("URI", ""))
        if local_name(reference.tag) == "CipherReference" and uri in chapters:
            raise package.encrypted()


def _toc_labels(package: Package, opf: Element, manifest: dict[str, _Item]) -> dict[str, str]:
    """Each chapter's first label in the table of contents, by its path: from the EPUB 3
    navigation document, else the EPUB 2 NCX."""
    nav = next((item for item in manifest.values() if "nav" in item.properties), None)
    if nav is not None and (data := package.read(nav.path)) is not None:
        labels = _nav_labels(data, posixpath.dirname(nav.path))
        if labels:
            return labels
    spine = opf.find(f"{{{_OPF}}}spine")
    ncx = manifest.get(spine.get("toc", "") if spine is not None else "")
    root = package.xml(ncx.path) if ncx is not None else None
    return {} if root is None or ncx is None else _ncx_labels(root, posixpath.dirname(ncx.path))


def _nav_labels(data: bytes, base: str) -> dict[str, str]:
    """Labels of an EPUB 3 navigation document's ``<nav epub:type="toc">`` (read as HTML:
    books use HTML's entities, which XML does not know)."""
    soup = parse_html(data.decode("utf-8", "replace"))
    toc = next((nav for nav in soup.find_all("nav") if "toc" in str(nav.get("epub:type"))), None)
    labels: dict[str, str] = {}
    for link in toc.find_all("a", href=True) if toc is not None else []:
        _add_label(labels, base, str(link["href"]), link.get_text())
    return labels


def _ncx_labels(root: Element, base: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for point in root.iter(f"{{{_NCX}}}navPoint"):
        text = point.find(f"{{{_NCX}}}navLabel/{{{_NCX}}}text")
        content = point.find(f"{{{_NCX}}}content")
        if text is not None and content is not None:
            _add_label(labels, base, content.get("src", ""), text.text or "")
    return labels


def _add_label(labels: dict[str, str], base: str, href: str, label: str) -> None:
    """Keep ``label`` for the chapter ``href`` points into, unless it has one already."""
    target = _resolve(base, urldefrag(href).url)
    label = " ".join(label.split())
    if target and label and target not in labels:
        labels[target] = label


def _resolve(base: str, href: str) -> str:
    """A path inside the zip, from an href relative to the part at ``base``."""
    return posixpath.normpath(posixpath.join(base, unquote(href))).lstrip("/")


def _chapters(
    package: Package, path: Path, limits: Limits, spine: list[str], labels: dict[str, str]
) -> Iterator[tuple[str, str]]:
    """Each chapter's Markdown, opening with its title, and the title; the text of all of
    them counted against ``limits.max_chars``."""
    budget = CharBudget(path, limits)
    number = 0
    for member in spine:
        data = package.read(member)
        if not data or data.isspace():
            continue
        left = dataclasses.replace(limits, max_chars=max(1, limits.max_chars - budget.used))
        page = load_html(Path(f"{path}!/{member}"), data, left)
        if not page.text.strip():
            continue  # a cover of one picture, a blank page
        number += 1
        title = labels.get(member) or heading_title(page.headings) or f"Chapter {number}"
        yield budget.spend(_headed(page, title)), title


def _headed(page: LoadedDocument, title: str) -> str:
    """The chapter's text opening with its title: as it is when its first heading, at its
    start, says the title; else under a ``# title`` line, its headings one level lower."""
    first = page.headings[0] if page.headings else None
    opening = first is not None and not page.text[: first.char_start].strip()
    if opening and first is not None and _same(first.title, title):
        return page.text
    pieces = [f"# {title}\n\n"]
    start = 0
    for heading in page.headings:
        if heading.level < _MAX_LEVEL:
            pieces += [page.text[start : heading.char_start], "#"]
            start = heading.char_start
    pieces.append(page.text[start:])
    return "".join(pieces)


def _same(one: str, other: str) -> bool:
    return " ".join(one.split()).casefold() == " ".join(other.split()).casefold()


def _properties(opf: Element) -> dict[str, str]:
    """The package's title, author (its creators, joined) and language."""

    def values(name: str) -> list[str]:
        found = (" ".join((e.text or "").split()) for e in opf.iter(f"{{{_DC}}}{name}"))
        return [value for value in found if value]

    titles, creators, languages = values("title"), values("creator"), values("language")
    properties = {
        "title": titles[0] if titles else "",
        "author": ", ".join(creators),
        "language": languages[0] if languages else "",
    }
    return {key: value for key, value in properties.items() if value}
