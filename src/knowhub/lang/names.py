"""Stopwords that are names: ``at``, ``which``, ``more`` the commands, not the words.

The lexical index leaves stopwords out, so "How do I remove a job that was queued with at?"
searched for ``remov job queu`` and found grep's ``-q``. A stopword is kept as a term when the
text uses it as a name, which both sides can tell without a dictionary:

* **the index** (:func:`heading_names`): in a document's title or a chunk's heading chain, a
  stopword written as a page reference (``at(1)``), in quotes or backticks, or among the names
  before a man page's dash (``at, batch, atq, atrm - queue, examine…``);
* **a question** (:func:`question_names`): a stopword in quotes or backticks, as a page
  reference, after ``man``, between ``the`` and ``command``, ``utility``, ``program``,
  ``tool`` or ``page`` (``the at command``, never ``Which command…``), or closing a clause
  after ``with``, ``using``, ``via`` or ``run`` (``queued with at?``); and any English
  stopword inside a Chinese or Russian question, where it can only be a name.

A name is stored and looked up as the word itself, lower-cased (``at``): no other term has
that form, since the tokenizer drops every stopword, so a name never matches ordinary prose.
Chunks indexed before names existed simply lack them; a re-ingest with ``--force`` adds them.
"""

from __future__ import annotations

import re
import unicodedata

from knowhub.lang.detect import detect_language
from knowhub.lang.stopwords import STOPWORDS_EN

__all__ = ["heading_names", "question_names"]

_WORD = r"[A-Za-z][A-Za-z0-9]*"
# Quoted or in backticks, or a page reference: in headings and in questions alike.
_QUOTED = re.compile(rf"[`'\"‘“«]({_WORD})[`'\"’”»]|\b({_WORD})\(\d\w*\)")
# A man page's NAME line: "at, batch, atq, atrm - queue, examine, or delete jobs".
_NAME_LIST = re.compile(r"^\s*([\w.+-]+(?:\s*,\s*[\w.+-]+)*)\s+[-\u2010\u2013\u2014\u2212]+\s")
_QUESTION_NAME = re.compile(
    rf"\bman\s+({_WORD})\b"
    rf"|\bthe\s+({_WORD})\s+(?:command|utility|program|tool|binary|page|manpage|man\s+page)s?\b"
    rf"|\b(?:with|using|via|run|runs|running|call|calls)\s+({_WORD})\s*(?:[?.!,;:)]|$)",
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
    groups: list[tuple[str, ...]] = _QUOTED.findall(text) + _QUESTION_NAME.findall(text)
    if detect_language(text) != "en":  # an English stopword among Chinese or Russian words
        groups.append(tuple(re.findall(_WORD, text)))
    return _stopwords_in(groups)
