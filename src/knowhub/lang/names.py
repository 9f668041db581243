"""Stopwords that are names: ``at``, ``which``, ``more`` the commands, not the words.

The lexical index leaves stopwords out, so "How do I remove a job that was queued with at?"
searched for ``remov job queu`` and found grep's ``-q``. A stopword is kept as a term when the
text uses it as a name, which both sides can tell without a dictionary:

* **the index** (:func:`heading_names`): in a document's title or a chunk's heading chain, a
  stopword written as a page reference (``at(1)``), in quotes or backticks, or among the names
  before a man page's dash (``at, batch, atq, atrm - queue, examine…``);
* **a question** (:func:`question_names`): a stopword in quotes or backticks, as a page
  reference, after ``man``, between ``the`` and ``command``, ``utility``, ``program``,
  ``tool`` or ``page`` (``the at command``, never ``Which command…``); and, when it is one
  of :data:`COMMAND_WORDS` (``at``, ``which``, ``more``…, never ``it`` or ``the``), closing
  a clause after ``with``, ``using``, ``via`` or ``run`` (``queued with at?``) or inside a
  Chinese or Russian question.

A name is stored and looked up as the word itself, lower-cased (``at``): no other term has
that form, since the tokenizer drops every stopword, so a name never matches ordinary prose.
Chunks indexed before names existed simply lack them; a re-ingest with ``--force`` adds them.
"""

from __future__ import annotations

import re
import unicodedata

from knowhub.lang.detect import query_language
from knowhub.lang.stopwords import STOPWORDS_EN

__all__ = ["heading_names", "question_names"]

# The stopwords that name commands (at, which, more, who) or shell words (for, if, while…):
# what a loose rule — a clause closed by one, one among Chinese or Russian words — may take
# as a name. "…with it?", "the of" are words, never names.
COMMAND_WORDS = frozenset(
    (
        *("at", "which", "more", "who", "whom", "do", "for", "if", "then"),
        *("while", "until", "once", "before", "after", "all", "same"),
    )
)

_WORD = r"[A-Za-z][A-Za-z0-9]*"
# Quoted or in backticks, or a page reference: in headings and in questions alike.
_QUOTED = re.compile(rf"[`'\"‘“«]({_WORD})[`'\"’”»]|\b({_WORD})\(\d\w*\)")
# A man page's NAME line: "at, batch, atq, atrm - queue, examine, or delete jobs".
_NAME_LIST = re.compile(r"^\s*([\w.+-]+(?:\s*,\s*[\w.+-]+)*)\s+[-\u2010\u2013\u2014\u2212]+\s")
_COMMAND = re.compile(
    rf"\bman\s+({_WORD})\b"
    rf"|\bthe\s+({_WORD})\s+(?:command|utility|program|tool|binary|page|manpage|man\s+page)s?\b",
    re.IGNORECASE,
)
_CLOSING = re.compile(
    rf"\b(?:with|using|via|run|runs|running|call|calls)\s+({_WORD})\s*(?:[?.!,;:)]|$)",
    re.IGNORECASE,
)


def _stopwords_in(groups: list[tuple[str, ...]]) -> list[str]:
    found = (word.lower() for group in groups for word in group if word)
    return list(dict.fromkeys(word for word in found if word in STOPWORDS_EN))


def heading_names(headings: list[str]) -> list[str]:
    """The stopwords ``headings`` (a title, a section path's parts) use as names.

    Args:
        headings: a document's title and a chunk's section path, in any order.

    Returns:
        Each such stopword once, lower-cased, in first-seen order.
    """
    groups: list[tuple[str, ...]] = []
    for heading in headings:
        text = unicodedata.normalize("NFKC", heading)
        groups += _QUOTED.findall(text)
        listed = _NAME_LIST.match(text)
        if listed:
            groups.append(tuple(re.split(r"\s*,\s*", listed.group(1))))
    return _stopwords_in(groups)


def question_names(question: str) -> list[str]:
    """The stopwords ``question`` uses as names (see the module docstring).

    Args:
        question: the user's question, in any language.

    Returns:
        Each such stopword once, lower-cased, in first-seen order; empty for most questions.
    """
    text = unicodedata.normalize("NFKC", question)
    strong: list[tuple[str, ...]] = _QUOTED.findall(text) + _COMMAND.findall(text)
    loose: list[tuple[str, ...]] = [(word,) for word in _CLOSING.findall(text)]
    if query_language(text) != "en":  # an English stopword among Chinese or Russian words
        loose.append(tuple(re.findall(_WORD, text)))
    named = _stopwords_in(loose)
    return list(dict.fromkeys(_stopwords_in(strong) + [w for w in named if w in COMMAND_WORDS]))
