"""The offline answer: the sentences of the sources that best answer the question.

Every sentence of the sources (cleaned: :mod:`knowhub.answer.evidence`) is scored by

- **words**: the share of the question's terms it holds, each weighed by its rarity among
  the sentences of the sources (inverse document frequency, Sparck Jones 1972, taken over
  the evidence): a term every sentence shares says little about which one answers;
- **meaning**: its cosine with the question on the embedder's calibrated scale
  (:mod:`knowhub.answer.meaning`; only for an embedder with a calibration); words and
  meaning count half each, words alone without one; words weigh less when the sources
  hold few of the question's terms (:func:`_reach`: a question in another language);
  An option the question names (``-a``, ``--list``) is a term too, matched as written (the
  tokenizer drops one-letter words);
- **heading**: the same weighed share of the question's terms in its source's section path
  (an option's entry under ``-i, --ignore-case`` answers "ignore case");
- **place**: a little for coming early in its source and for its source ranking higher;
- **value**: for a question asking a quantity ("how many", "сколько", "多少"), a sentence
  stating a number (:mod:`knowhub.answer.quantity`) gains as much as a heading can give.

The best ones are quoted best first, at most ``max_sentences``: a sentence scoring under
half the best is left out (one shared word is not an answer). A lead-in ending in ':' is
quoted with what follows it (the list or command it introduces; a question, its answer), or
not at all; the best sentence is quoted with the short one after it in its paragraph when
that one scores as a pick would (a setting's default is often there), ahead of better ones
from elsewhere — for a question asking a quantity, the first sentence stating one in its
paragraph or the next; a later pick is quoted with that next sentence when it scores as a
pick would and nearly as well as the pick (:data:`NEXT_SHARE`:
"大多数的开发者讨论在此邮件列表进行。" / "也可以向这里发送补丁。"); any pick is
quoted with a lead-in after it, however that scores, and what it introduces
("以 GOsa 管理这种情况相当简单：" / the steps); a line a lead-in introduces is quoted with
its lead-in; a sentence that leans on the one before ("That means …", "Однако …", "因此…")
is quoted after it; a sentence already quoted from another source is not quoted again: it
cites both sources.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from knowhub.answer.evidence import Sentence, evidence
from knowhub.answer.meaning import closeness
from knowhub.answer.quantity import asks_quantity, gives_quantity
from knowhub.lang import index_tokens, query_tokens
from knowhub.models import Hit
from knowhub.providers.embedders.cached import CachedVectors

__all__ = ["extractive_answer"]

HEADING = 0.15  # the weight of the section path's share of the question's terms
VALUE = HEADING  # the bonus of a sentence stating a number, for a question asking one
EARLY = 0.05  # the bonus of a source's first sentence (halved for the second, …)
LOWER_SOURCE = 0.03  # the cost of each rank a source is below the first
KEEP = 0.5  # a sentence scoring under this share of the best is left out
SAME = 0.75  # two sentences whose terms overlap this much (Jaccard) say the same
# A name of joined parts (max_user_watches, /etc/nologin, ssl_ciphers, desktop=kde): two
# sentences alike in words but naming different ones say different things.
_JOINED_NAME = re.compile(r"[\w-]+(?:[_./=:][\w-]+)+")
FOLLOW_CHARS = 300  # what a lead-in is completed with, at most (and at most FOLLOW_ITEMS)
FOLLOW_ITEMS = 3
NEXT_CHARS = 200  # a pick's next sentence is quoted with it up to this length
NEXT_SHARE = 0.8  # … and, after the best pick's, when it scores this share of the pick's own
# A one-word heading that names a setting or value (multi, nameserver, max_connections,
# 124), not a topic (Installation, Overview): lower case, digits or joiners.
_SETTING = re.compile(r"[a-z0-9][a-z0-9_.=:-]*|[\w.=:-]*[\d_=][\w.=:-]*")
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


@dataclass
class _Pick:
    text: str  # as quoted: led by its entry's name when it does not say it
    terms: frozenset[str]
    names: frozenset[str]  # the joined names the quoted sentences themselves say
    cites: list[int] = field(default_factory=list)

    def says(self, terms: frozenset[str], names: frozenset[str]) -> bool:
        """Whether sentences with these ``terms`` and joined ``names`` say what this pick
        says: nearly the same words (:data:`SAME`) and the same names. Man pages repeat one
        sentence for each limit ("/proc/sys/fs/inotify/max_user_watches В этом файле
        задаётся ограничение на количество сторожков…", then "…max_user_instances
        …экземпляров…"): the name is the answer."""
        return _jaccard(self.terms, terms) >= SAME and self.names == names


def extractive_answer(
    question: str,
    sources: Sequence[Hit],
    max_sentences: int = 3,
    vectors: CachedVectors | None = None,
    language: str = "en",
) -> str:
    """Up to ``max_sentences`` sentences of ``sources``, best first, each cited ``[n]``
    (n: 1-based source number). ``vectors`` (the collection's embedder) adds the
    sentences' meaning to their words; ``language`` is the question's."""
    found = evidence(sources)
    flat = [s for group in found for s in group]
    if not flat:
        return ""
    quantity = asks_quantity(question)
    scored = _scored(question, flat, sources, vectors, language, quantity)
    entries = [_entry(h.section_path) for h in sources]
    picks = _picked(scored, found, max_sentences, entries, quantity)
    return " ".join(f"{p.text} {''.join(f'[{n}]' for n in p.cites)}" for p in picks)


def _scored(
    question: str,
    flat: list[Sentence],
    sources: Sequence[Hit],
    vectors: CachedVectors | None,
    language: str,
    quantity: bool,
) -> list[tuple[float, Sentence]]:
    """Every sentence with its score, best first (``quantity``: the question asks one)."""
    asked = [*query_tokens(question, joined=False), *dict.fromkeys(_OPTION.findall(question))]
    terms = [_terms(s.text) for s in flat]
    weights = _rarity(asked, terms)
    headings = [_terms(hit.section_path) for hit in sources]
    meaning = closeness(vectors, language, question, [s.text for s in flat])
    reach = 1.0 if meaning is None else _reach(weights, len(set(asked) - weights.keys()))
    out = []
    for i, sentence in enumerate(flat):
        words = _share(weights, terms[i])
        score = words if meaning is None else (words * reach + meaning[i]) / 2
        score += HEADING * _share(weights, headings[sentence.n - 1])
        score += VALUE if quantity and gives_quantity(sentence.text) else 0.0
        score += EARLY / (1 + sentence.position) - LOWER_SOURCE * (sentence.n - 1)
        out.append((score, sentence))
    out.sort(key=lambda scored: -scored[0])  # stable: ties keep the sources' order
    return out


def _terms(text: str) -> frozenset[str]:
    """``text``'s index terms and the options it names as written."""
    return frozenset([*index_tokens(text), *_OPTION.findall(text)])


def _rarity(question: list[str], sentences: list[frozenset[str]]) -> dict[str, float]:
    """Each question term's weight: log(1 + N / df) over the N evidence sentences; a term
    no sentence holds tells none apart and is left out."""
    count = len(sentences)
    frequency = {term: sum(term in s for s in sentences) for term in question}
    return {t: math.log(1 + count / df) for t, df in frequency.items() if df}


def _reach(weights: dict[str, float], absent: int) -> float:
    """How much of the question the sources' words can say: the weight of the terms some
    sentence holds against that of all, a term none holds weighing the least a held one can
    (log 2, a term every sentence holds). Words are scaled by it against meaning. A question
    in Russian over English or Chinese sources shares only its names with them ("Debian
    Edu", "Samba"), which nearly every sentence holds; scored on those alone, words ranked a
    sentence naming them above the one that answers, whose meaning is closer (real-document
    sets: cross-lingual keywords present 0.25 → 0.42, none lost in one language)."""
    held = sum(weights.values())
    return held / (held + absent * math.log(2)) if held else 0.0


def _share(weights: dict[str, float], terms: frozenset[str]) -> float:
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in terms) / total if total else 0.0


def _entry(section_path: str) -> str | None:
    """The entry a chunk is under when its heading names a thing rather than a topic: an
    option (``--pid=PID``) or a one-word setting or value (``multi``, ``124``) below a
    page's section, never a topic (``Installation``). A sentence of such an entry rarely
    repeats it (``和 -f 同时使用时…``), yet the name is the answer to "which option"."""
    parts = [part.strip() for part in section_path.split(" > ")]
    last = parts[-1] if parts else ""
    if not last or len(last) > 40:
        return None
    if last.startswith(("-", "+")) or (len(parts) >= 3 and _SETTING.fullmatch(last)):
        return last
    return None


def _named(text: str, entry: str | None, named: set[str]) -> str:
    """``text`` led by its ``entry``'s name when it does not say it (once per answer)."""
    if entry is None or entry in named or entry.casefold() in text.casefold():
        return text
    named.add(entry)
    return f"{entry.rstrip(':：')}: {text}"


def _picked(
    scored: list[tuple[float, Sentence]],
    found: list[list[Sentence]],
    limit: int,
    entries: list[str | None],
    quantity: bool,
) -> list[_Pick]:
    """The best sentences, lead-ins completed, each said once, led by their entry's name
    (:func:`_entry`); ``quantity``: the question asks one (:func:`_value_after`)."""
    best = scored[0][0]
    scores = {(s.n, s.position): score for score, s in scored}
    picks: list[_Pick] = []
    used: set[tuple[int, int]] = set()
    named: set[str] = set()
    for score, sentence in scored:
        if len(picks) == limit or (picks and score < best * KEEP):
            break  # the best is always quoted, even when it scores below 0
        if (sentence.n, sentence.position) in used:
            continue
        group = found[sentence.n - 1]
        own = _run(group, sentence, used)
        if sentence.lead_in and (len(own) == 1 or used & {(p.n, p.position) for p in own}):
            continue  # a lead-in alone says nothing; what follows it is already quoted
        runs = _with_antecedent(group, sentence, own, used)
        if own == [sentence]:  # quoted without a lead-in
            floor = max(score * NEXT_SHARE, best * KEEP) if picks else best * KEEP
            runs += _continued(group, sentence, used, scores, floor)
            if not picks and quantity and not _states_value(runs):
                taken = used | {(p.n, p.position) for run in runs for p in run}
                runs += [[s] for s in _value_after(group, sentence, taken)]
        # Each run (a sentence, or a lead-in with what it introduces) is cited on its own,
        # as verification reads each one.
        text = f" [{sentence.n}] ".join(" ".join(p.text for p in run) for run in runs)
        parts = [p for run in runs for p in run]
        used.update((p.n, p.position) for p in parts)
        terms = frozenset(index_tokens(text)) or frozenset([text.casefold()])
        names = frozenset(_JOINED_NAME.findall(text))
        same = next((p for p in picks if p.says(terms, names)), None)
        if same is None:
            quoted = _named(text, entries[sentence.n - 1], named)
            picks.append(_Pick(quoted, terms, names, [sentence.n]))
        elif sentence.n not in same.cites:
            same.cites.append(sentence.n)
    return picks


def _run(group: list[Sentence], sentence: Sentence, used: set[tuple[int, int]]) -> list[Sentence]:
    """What quoting ``sentence`` takes: its lead-in and what that introduces (when not quoted
    yet), else the sentence and what it introduces (a lead-in's list or command)."""
    lead = _introducing(group, sentence, used)
    start = lead or sentence
    return [start, *_following(group, start)]


def _with_antecedent(
    group: list[Sentence], sentence: Sentence, own: list[Sentence], used: set[tuple[int, int]]
) -> list[list[Sentence]]:
    """``own`` (:func:`_run`), led by the run of the sentence before when ``sentence``
    refers back to it ("Sorts are guaranteed to be stable." / "That means that …"), unless
    any of that is quoted already or a lead-in already leads ``sentence``. The sentence
    before is in its paragraph, or else a line a lead-in introduces ("…является команда:" /
    "$ objdump -p … | grep NEEDED" / "Однако заметим, что эта альтернатива …"): across a
    paragraph break, a man page's next entry ("This option …") leans on its heading."""
    if own[0] is not sentence or not sentence.refers_back or sentence.position == 0:
        return [own]
    previous = group[sentence.position - 1]
    before = _run(group, previous, used)
    if previous.block != sentence.block and before[0] is previous:
        return [own]
    if used & {(p.n, p.position) for p in before}:
        return [own]
    return [before, own]


def _following(group: list[Sentence], lead: Sentence) -> list[Sentence]:
    """What a lead-in introduces: the rest of its paragraph, or else the next paragraph
    (a list, a command line set apart), up to FOLLOW_ITEMS sentences and FOLLOW_CHARS
    characters; nothing for a sentence that is not a lead-in."""
    after = group[lead.position + 1 :]
    if not lead.lead_in or not after:
        return []
    block = lead.block if after[0].block == lead.block else after[0].block
    out: list[Sentence] = []
    for sentence in [s for s in after if s.block == block][:FOLLOW_ITEMS]:
        if out and sum(len(s.text) for s in out) + len(sentence.text) > FOLLOW_CHARS:
            break
        out.append(sentence)
    return out


def _introducing(
    group: list[Sentence], sentence: Sentence, used: set[tuple[int, int]]
) -> Sentence | None:
    """The lead-in that introduces ``sentence`` (it is among what :func:`_following` quotes
    with it), not quoted yet: a command line or list item is quoted with its lead-in, which
    often holds what the item does not ("with open('some.csv', 'w', newline='') as f:" /
    "writer = csv.writer(f)")."""
    for lead in reversed(group[max(0, sentence.position - FOLLOW_ITEMS) : sentence.position]):
        if lead.lead_in and sentence in _following(group, lead):
            return None if (lead.n, lead.position) in used else lead
    return None


def _next(group: list[Sentence], pick: Sentence, used: set[tuple[int, int]]) -> list[Sentence]:
    """The sentence after ``pick`` in its paragraph, when short: what a passage says of a
    setting often ends in the next sentence ("… reserved for superusers. The default is
    three connections."), and what it says of a thing its heading names ("Most developer
    discussion takes place on this list. You can also send patches here.")."""
    after = group[pick.position + 1 : pick.position + 2]
    return [
        s
        for s in after
        if s.block == pick.block and len(s.text) <= NEXT_CHARS and (s.n, s.position) not in used
    ]


def _continued(
    group: list[Sentence],
    pick: Sentence,
    used: set[tuple[int, int]],
    scores: dict[tuple[int, int], float],
    floor: float,
) -> list[list[Sentence]]:
    """What ``pick`` is quoted with after it (:func:`_next`): the next sentence when it
    scores ``floor``, or, whatever it scores, a lead-in with what it introduces — "… by
    setting the execution policy. You can do this by issuing the following command:" /
    the command; "以 GOsa 管理这种情况相当简单：" / the steps."""
    runs = []
    for after in _next(group, pick, used):
        follow = _following(group, after)
        if follow and not used & {(s.n, s.position) for s in follow}:
            runs.append([after, *follow])
        elif not after.lead_in and scores[(after.n, after.position)] >= floor:
            runs.append([after])
    return runs


def _value_after(
    group: list[Sentence], best: Sentence, used: set[tuple[int, int]]
) -> list[Sentence]:
    """For a question asking a quantity whose best sentence states none: the first short
    sentence after it in its paragraph, or in the next, that states one ("Determines the
    number of connection slots reserved for superusers. At most … Whenever … The default
    value is three connections."; a man page entry's "Значение по умолчанию равно
    1048576." a paragraph down), however few of the question's words it shares."""
    for s in group[best.position + 1 :]:
        if s.block > best.block + 1:
            break
        if len(s.text) <= NEXT_CHARS and (s.n, s.position) not in used and gives_quantity(s.text):
            return [s]
    return []


def _states_value(runs: list[list[Sentence]]) -> bool:
    """Whether any sentence of ``runs`` states a quantity."""
    return any(gives_quantity(s.text) for run in runs for s in run)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0
