"""The sentences of an answer's sources, cleaned for quoting.

Text as loaders give it carries what reads as noise once quoted: a man page saved with
``col -b`` has tabs inside sentences and words hyphenated across lines (``supe‐ ruser``), its
section heading runs into the first sentence (``DESCRIPTION at and batch …``), and a table of
version numbers becomes a "sentence" of numbers and marks (``3.1.: 3.3.;``). Each sentence
is cleaned here; what holds no word is dropped. Commands and options are kept as written,
only their runs of white space are made single spaces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from knowhub.lang.sentences import sentences
from knowhub.models import Hit

__all__ = ["Sentence", "clean", "evidence"]

# groff's hyphen (U+2010) before white space: a word broken at the end of a line. Options
# use the ASCII hyphen-minus, which is never joined.
_BROKEN_WORD = re.compile(r"(\w)\u2010\s+(\w)")
# Numbering and marks without words before the text: "3.1.: 3.3.; ", ": ", "| ", "• ".
_LEADING_DEBRIS = re.compile(r"^(?:(?:\d+(?:\.\d+)*[.:;]+|[:;,|•·]+)\s+)+")
_TRAILING_DEBRIS = re.compile(r"(?:\s+[:;,|•·]+)+$")
_LETTER = re.compile(r"[^\W\d_]")
# A colon introduces a list or a command; a question (an FAQ's "В: … где включить?")
# introduces its answer.
_LEAD_IN = (":", "：", "?", "？")
# Openings that lean on the sentence before: a pronoun or demonstrative as the subject
# ("That means that …", "Это означает, что …", "这意味着…") or a connective ("However", "Поэтому",
# "因此"). Quoted alone, such a sentence leaves out what it is about.
# "It is an error to …", "It is recommended that …" point at nothing before them.
_REFERS_BACK = re.compile(
    r"^(?:(?:This|That|These|Those|They|Such|Thus|Hence|Therefore|However|But|Also|So|Then|"
    r"Otherwise|In (?:this|that|such|either) case)\b"
    r"|It\b(?!\s+(?:is|was|may be|can be|would be)\s+(?:\w+\s+){1,3}?(?:to|that)\b)"
    r"|(?:Это|Эта|Этот|Эти|Этим|Этой|Этого|Он|Она|Оно|Они|Но|Поэтому|Однако|Также|Тогда|Иначе|"
    r"Следовательно|Таким образом|При этом|Кроме того|В (?:этом|таком) случае)\b"
    r"|这|此|该|它|因此|所以|但|然而|那么|否则|另外)"
)
_BLANK_LINE = re.compile(r"\n\s*\n")  # as knowhub.lang.sentences parts paragraphs
_WORDS_ONLY = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)*")


@dataclass(frozen=True)
class Sentence:
    """One cleaned sentence of source ``n`` (1-based), the ``position``-th of its source,
    in its ``block``-th paragraph (blocks are parted by blank lines)."""

    n: int
    position: int
    text: str
    block: int = 0

    @property
    def lead_in(self) -> bool:
        """Whether it introduces what follows (a list, a command line, an FAQ's answer)."""
        return self.text.endswith(_LEAD_IN)

    @property
    def refers_back(self) -> bool:
        """Whether it leans on the sentence before it ("That means …", "Однако …", "因此…")."""
        return bool(_REFERS_BACK.match(self.text))


def clean(sentence: str) -> str:
    """``sentence`` with broken words joined, white space single, debris stripped; empty
    when nothing in it is a word."""
    text = " ".join(_BROKEN_WORD.sub(r"\1\2", sentence).split())
    text = _TRAILING_DEBRIS.sub("", _LEADING_DEBRIS.sub("", text))
    return text if _LETTER.search(text) else ""


def evidence(sources: Sequence[Hit]) -> list[list[Sentence]]:
    """Each source's cleaned sentences, in order (its own heading line left out: it is in
    the section path)."""
    out: list[list[Sentence]] = []
    for n, hit in enumerate(sources, start=1):
        blocks = _BLANK_LINE.split(_without_heading(hit.text, hit.section_path))
        found = [(b, clean(s)) for b, block in enumerate(blocks) for s in sentences(block)]
        kept = [(b, text) for b, text in found if text]
        out.append([Sentence(n, i, text, b) for i, (b, text) in enumerate(kept)])
    return out


def _without_heading(text: str, section_path: str) -> str:
    """``text`` less its first lines while they are headings of its section path in words
    (plain-text formats keep them in the chunk, where they run into the first sentence:
    ``General Output Control -c, --count …``). A heading that names an option or a command
    (``-i, --ignore-case``) stays: it is what the entry is."""
    headings = {
        part.strip().casefold()
        for part in section_path.split(" > ")
        if _WORDS_ONLY.fullmatch(part.strip())
    }
    rest = text.lstrip()
    while headings:
        first, _, after = rest.partition("\n")
        if first.strip().casefold() not in headings:
            break
        rest = after.lstrip()
    return rest
