"""Hybrid search. This is the one list of its stages, in order (the timed ones are named by
their ``timings_ms`` keys; docs/search.md explains them for users):

1. **validate** the request (query, ``top_k``, ``min_score``, collection); an identical
   request on an unchanged collection is answered from the result **cache**;
2. **routing**: the query's language from its script, its lexical terms (with the stopwords
   it uses as names, :mod:`knowhub.lang.names`), and whether the dense leg runs (an embedder
   that does not know the language is skipped);
3. **lexical** leg (BM25) and 4. **dense** leg (after **query_embedding**), the filters and
   the caller's data scope (:mod:`knowhub.scope`) inside both;
5. **cross_lingual**: only when the dense hits hold passages in another language that can
   reach the best ten (:mod:`knowhub.query.crosslingual`);
6. **fusion**: the legs fused (weighted min-max or RRF), the entries defining an option the
   query names first (:mod:`knowhub.query.options`), one hit per passage, each hit's
   absolute relevance (:mod:`knowhub.query.relevance`), ``min_score`` applied;
7. **rerank**, when a reranker is configured (:mod:`knowhub.query.rerank`);
8. the cut to ``top_k``; citing and tracing are the caller's (the hits carry their place).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knowhub.checks import check_min_score, check_query, check_store_name, check_top_k, logical_name
from knowhub.config import SearchSettings
from knowhub.errors import CollectionNotFound, QueryError
from knowhub.lang import query_language, query_tokens, question_names
from knowhub.models import Filters, Hit
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.stores.base import Store
from knowhub.query import crosslingual, options
from knowhub.query.cache import SearchCaches
from knowhub.query.filters import resolve_filters
from knowhub.query.fusion import reciprocal_rank_fusion, weighted_fusion
from knowhub.query.relevance import with_relevance
from knowhub.query.rerank import RerankOutcome, RerankStage
from knowhub.scope import UNRESTRICTED, Scope

__all__ = [
    "Legs",
    "SearchRequest",
    "SearchResult",
    "StageHook",
    "fuse",
    "fuse_with_options",
    "fusion_weights",
    "retrieve",
    "search",
    "term_counts",
]

StageHook = Callable[[str, int, float], None]
"""Called as each stage ends: ``hook(stage, hits, elapsed_ms)`` (for live progress)."""


@dataclass(frozen=True)
class SearchRequest:
    query: str
    collection: str
    top_k: int = 5
    filters: Filters = field(default_factory=dict)
    min_score: float = 0.0
    max_top_k: int = 100
    scope: Scope = UNRESTRICTED  # what the caller may see: a filter inside both legs


@dataclass
class SearchResult:
    """Hits plus what it took to find them (the seed of a trace)."""

    hits: list[Hit]
    language: str
    dense_used: bool
    timings_ms: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    rerank: RerankOutcome = field(default_factory=RerankOutcome)
    cache: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hits": [h.to_dict() for h in self.hits],
            "language": self.language,
            "dense_used": self.dense_used,
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
            "counts": self.counts,
            "rerank": self.rerank.to_dict(),
            "cache": self.cache,
        }


@dataclass
class Legs:
    """What each retriever returned: ``[(chunk row id, score), …]`` best first."""

    lexical: list[tuple[int, float]]
    dense: list[tuple[int, float]]
    language: str
    dense_used: bool
    cache: str = "off"  # query embedding: hit | miss | skipped (no dense leg) | off
    # A search across languages (knowhub.query.crosslingual): ``dense`` ranks by the debiased
    # query, ``cosines`` is the plain query's leg (true cosines, for relevance), and
    # ``lexical_factors`` damps every lexical hit in a search across languages (None: not one).
    cosines: list[tuple[int, float]] | None = None
    lexical_factors: dict[int, float] | None = None
    by_sentences: int = 0  # how many dense hits were scored by their sentences too

    @property
    def similarities(self) -> list[tuple[int, float]]:
        """The dense leg's cosines to the query as asked (not debiased)."""
        return self.dense if self.cosines is None else self.cosines


def search(
    store: Store,
    embedder: Embedder,
    settings: SearchSettings,
    request: SearchRequest,
    rerank: RerankStage | None = None,
    caches: SearchCaches | None = None,
    on_stage: StageHook | None = None,
) -> SearchResult:
    """Run one hybrid search and return the cut, cited hits (reranked when ``rerank``).

    With ``caches``, an identical request on an unchanged collection is answered from
    the result cache (its key holds the collection version, so any ingest invalidates
    it) and repeated query texts reuse their embedding. ``on_stage`` hears each stage
    as it ends.
    """
    report = on_stage or _silent
    clock = time.perf_counter()
    cid, request = _validate(store, request, caches)
    key = _result_key(store, cid, request, embedder, settings.dense_weight)
    cached: SearchResult | None = caches.results.get(key) if caches is not None else None
    if cached is not None:
        report("cache", len(cached.hits), _lap(clock))
        return replace(
            cached, timings_ms={"cache": _lap(clock)}, cache={**cached.cache, "result": "hit"}
        )
    timings: dict[str, float] = {}
    legs = _retrieve(store, embedder, settings, request, cid, timings, caches, report)
    clock = time.perf_counter()
    window = request.top_k if rerank is None else rerank.window(request.top_k)
    hits, promoted = _fused_hits(store, embedder, settings, request, legs, window)
    timings["fusion"] = _lap(clock)
    report("fusion", len(hits), timings["fusion"])
    outcome = RerankOutcome()
    if rerank is not None:
        hits, outcome = rerank(request.query.strip(), hits)
        timings["rerank"] = outcome.ms
        report("rerank", len(hits), outcome.ms)
    hits = hits[: request.top_k]
    counts = {"lexical": len(legs.lexical), "dense": len(legs.dense), "hits": len(hits)}
    if legs.cosines is not None:  # the search crossed languages (knowhub.query.crosslingual)
        counts["cross_lingual"] = len(legs.dense)
    if promoted:  # entries defining an option the query names (knowhub.query.options)
        counts["option_entries"] = promoted
    cache = {"result": "miss" if caches is not None else "off", "query_embedding": legs.cache}
    result = SearchResult(hits, legs.language, legs.dense_used, timings, counts, outcome, cache)
    # A failed rerank is not cached: the next identical query may well succeed.
    if caches is not None and outcome.error is None:
        caches.results.put(key, result)
    return result


def _result_key(
    store: Store, cid: int, request: SearchRequest, embedder: Embedder, dense_weight: float
) -> tuple[Any, ...]:
    """The result cache's key: the collection's version in it, so any write invalidates,
    the relevance range and the dense weight (measured on the collection, they change
    without a write)."""
    return (
        cid,
        store.version(cid),
        dense_weight,
        embedder.relevance_range,
        tuple(sorted(embedder.relevance_by_language.items())),
        request.query.strip(),
        tuple(sorted(request.filters.items())),
        request.top_k,
        request.min_score,
        request.scope.digest(),  # never a result across scopes
    )


def _fused_hits(
    store: Store,
    embedder: Embedder,
    settings: SearchSettings,
    request: SearchRequest,
    legs: Legs,
    window: int,
) -> tuple[list[Hit], int]:
    """The legs fused into the best ``window`` distinct hits good enough to keep, each with
    its rank and score in every leg; and how many were put first for defining an option the
    query names."""
    fused, promoted, rows = fuse_with_options(store, settings, legs, request.query)
    fused = fused[: 2 * window]  # room for the duplicates _distinct drops
    unread = [i for i, _ in fused if i not in rows]
    if unread:  # all read already when the query named an option
        rows |= store.hits(unread)
    lexical_rank = {item: r for r, (item, _) in enumerate(legs.lexical, start=1)}
    dense_rank = {item: r for r, (item, _) in enumerate(legs.dense, start=1)}
    dense_score = dict(legs.similarities)
    hits = [
        replace(
            rows[i],
            score=s,
            lexical_rank=lexical_rank.get(i),
            dense_rank=dense_rank.get(i),
            fused_score=s,
            fused_rank=rank,
            dense_score=dense_score.get(i),
        )
        for rank, (i, s) in enumerate(fused, start=1)
        if i in rows
    ]
    hits = _distinct(hits)[:window]
    # The fused score ranks; the absolute relevance decides what is good enough to keep.
    hits = with_relevance(
        request.query.strip(),
        hits,
        legs.similarities if legs.dense_used else None,
        embedder.calibration(legs.language),
        legs.language,
    )
    return [h for h in hits if (h.relevance or 0.0) >= request.min_score], promoted


def fuse_with_options(
    store: Store, settings: SearchSettings, legs: Legs, query: str
) -> tuple[list[tuple[int, float]], int, dict[int, Hit]]:
    """:func:`fuse`, then the hits whose heading defines an option ``query`` names first
    (:mod:`knowhub.query.options`): the fused list, how many were moved, and the rows read
    to find them (every candidate's, only when the query names an option)."""
    fused = fuse(settings, legs)
    if not options.asked(query):
        return fused, 0, {}
    rows = store.hits([i for i, _ in fused])  # the defining entry may have fused low
    paths = {i: row.section_path for i, row in rows.items()}
    ordered, promoted = options.defining_first(fused, paths, query)
    return ordered, promoted, rows


def _validate(
    store: Store, request: SearchRequest, caches: SearchCaches | None
) -> tuple[int, SearchRequest]:
    """Check every argument; return the collection's id and the request with its filter
    keys resolved (an unknown key is an error, not an empty result)."""
    check_query(request.query)
    check_top_k(request.top_k, request.max_top_k)
    check_min_score(request.min_score)
    cid = store.collection_id(check_store_name(request.collection))
    if cid is None:
        known = ", ".join(sorted({logical_name(c.name) for c in store.collections()})) or "none yet"
        raise CollectionNotFound(
            f"unknown collection {request.collection!r} (known: {known}); ingest into it first"
        )
    filters = resolve_filters(
        store, cid, request.collection, request.filters, caches, request.scope
    )
    return cid, replace(request, filters=filters)


def term_counts(
    store: Store, request: SearchRequest, terms: Sequence[str], limit: int
) -> dict[str, int]:
    """How many chunks, up to ``limit``, hold each of ``terms`` (as the lexical index stores
    them) in the request's collection, within its filters and the caller's scope: one lexical
    search per term (``request.query`` is only validated)."""
    cid, request = _validate(store, request, None)
    filters = request.scope.constrain(request.filters)
    if filters is None:  # the filters ask only for what the scope hides: nothing is seen
        return dict.fromkeys(terms, 0)
    return {term: len(store.lexical_search(cid, [term], limit, filters)) for term in terms}


def retrieve(
    store: Store,
    embedder: Embedder,
    settings: SearchSettings,
    request: SearchRequest,
    timings: dict[str, float] | None = None,
    caches: SearchCaches | None = None,
) -> Legs:
    """Validate the request and run both legs, each with the filters applied inside it."""
    cid, request = _validate(store, request, caches)
    return _retrieve(
        store, embedder, settings, request, cid, {} if timings is None else timings, caches, _silent
    )


def _retrieve(
    store: Store,
    embedder: Embedder,
    settings: SearchSettings,
    request: SearchRequest,
    cid: int,
    timings: dict[str, float],
    caches: SearchCaches | None,
    report: StageHook,
) -> Legs:
    query = request.query.strip()
    clock = time.perf_counter()
    language = query_language(query)
    tokens = query_tokens(query) + question_names(query)  # "queued with at": at, the command
    # An embedder that does not know the query's language would only add noise.
    dense_used = settings.dense_weight > 0 and (
        embedder.languages is None or language in embedder.languages
    )
    timings["routing"] = _lap(clock)
    report("routing", 0, timings["routing"])
    n = max(settings.candidates, request.top_k)
    filters = request.scope.constrain(request.filters)
    if filters is None:  # the caller's filters ask only for what its scope hides
        return Legs([], [], language, dense_used, "skipped")

    clock = time.perf_counter()
    lexical = store.lexical_search(cid, tokens, n, filters)
    timings["lexical"] = _lap(clock)
    report("lexical", len(lexical), timings["lexical"])
    legs = Legs(lexical, [], language, dense_used, "skipped")
    if not dense_used:
        return legs
    _check_embedder(store, embedder, cid, request.collection)
    clock = time.perf_counter()
    vector, legs.cache = _query_vector(embedder, query, caches)
    timings["query_embedding"] = _lap(clock)
    clock = time.perf_counter()
    legs.dense = store.dense_search(cid, vector, n, filters)
    timings["dense"] = _lap(clock)
    report("dense", len(legs.dense), timings["query_embedding"] + timings["dense"])
    clock = time.perf_counter()
    search = (cid, vector, n, filters)
    crossed = _across_languages(store, embedder, settings, legs, search, caches, query)
    if crossed is not None:
        timings["cross_lingual"] = _lap(clock)
        report("cross_lingual", len(crossed.dense), timings["cross_lingual"])
        return crossed
    return legs


def _across_languages(
    store: Store,
    embedder: Embedder,
    settings: SearchSettings,
    legs: Legs,
    search: tuple[int, Vectors, int, Filters],
    caches: SearchCaches | None,
    query: str,
) -> Legs | None:
    """``legs`` re-ranked for a query whose dense hits include passages in another language
    (see :mod:`knowhub.query.crosslingual`); None when none does, when none of them can
    reach the 10 best once each passage's score lost its language's share
    (:func:`crosslingual.language_offsets`), or when the embedder or the settings leave it
    off.

    Costs a read of the dense leg's rows; across languages also of the lexical leg's and
    the debiased leg's rows, a second dense search, and, when none of the dense leg's rows
    is in the question's language, embedding the sentences of the best rows within reach
    not seen before.
    """
    debias, damping = settings.cross_lingual_debias, settings.cross_lingual_lexical_weight
    sentences = crosslingual.sentences_scored(settings)
    if not embedder.cross_lingual or (debias == 0 and damping == 1 and not sentences):
        return None
    cid, vector, n, filters = search
    found = store.hits([item for item, _ in legs.dense])
    if not crosslingual.any_other(legs.language, [row.language for row in found.values()]):
        return None
    terms = query_tokens(query, joined=False)  # as relevance reads them (with_relevance)
    calibration, home = embedder.calibration(legs.language), settings.cross_lingual_home
    if crosslingual.answered_at_home(legs.language, legs.dense, found, terms, calibration, home):
        return None
    dense = legs.dense
    if crosslingual.holds(legs.language, [row.language for row in found.values()]):
        sentences = 0  # a mixed collection: see crosslingual.holds
    mean = crosslingual.language_mean(embedder, legs.language)
    if mean is not None and debias > 0:
        vector = crosslingual.debiased(vector, mean, debias)
        dense = store.dense_search(cid, vector, n, filters)
    found |= store.hits([item for item, _ in dense if item not in found])
    of = {item: row.language for item, row in found.items()}
    share = crosslingual.PASSAGE_DEBIAS if debias > 0 else 0.0
    offsets = crosslingual.language_offsets(embedder, vector, list(of.values()), share)
    ranked = crosslingual.offset(dense, of, offsets, legs.language)
    best = crosslingual.within_reach(ranked, sentences or crosslingual.LOOKED_AT)
    reached = crosslingual.read_languages(legs.language, [found[i] for i in best if i in found])
    if not crosslingual.any_other(legs.language, reached):
        return None  # no passage in another language can reach the best: one language's search
    factors = crosslingual.lexical_damping(legs.lexical, damping)
    texts: dict[int, str] = {}
    if sentences:
        texts = {item: found[item].text for item in best if item in found}
        weight = settings.cross_lingual_sentence_weight
        cache = None if caches is None else caches.sentence_vectors
        dense = crosslingual.by_sentences(dense, texts, vector, embedder, weight, cache)
        ranked = crosslingual.offset(dense, of, offsets, legs.language)
    return replace(
        legs, dense=ranked, cosines=legs.dense, lexical_factors=factors, by_sentences=len(texts)
    )


def _check_embedder(store: Store, embedder: Embedder, cid: int, name: str) -> None:
    built_with, dim = store.embedder_of(cid)
    if (built_with, dim) != (embedder.model_id, embedder.dim):
        raise QueryError(
            f"collection {name!r} was built with embedder {built_with} (dim {dim}), but "
            f"{embedder.model_id} (dim {embedder.dim}) is configured: switch embedder.provider "
            "(or its settings, e.g. embedder.onnx.quantize) back, or re-ingest into a new "
            "collection"
        )


def _query_vector(
    embedder: Embedder, query: str, caches: SearchCaches | None
) -> tuple[Vectors, str]:
    if caches is None:
        return embedder.embed_query(query), "off"
    key = (embedder.model_id, query)
    vector = caches.query_vectors.get(key)
    if vector is not None:
        return vector, "hit"
    vector = embedder.embed_query(query)
    caches.query_vectors.put(key, vector)
    return vector, "miss"


def fuse(settings: SearchSettings, legs: Legs) -> list[tuple[int, float]]:
    """Fuse the legs as configured: weighted min-max scores (default) or RRF."""
    base = fusion_weights(settings, legs)
    rankings = {"lexical": legs.lexical, "dense": legs.dense}
    live = {leg: ranking for leg, ranking in rankings.items() if ranking and base[leg] > 0}
    if not live:
        return []
    factors = {"lexical": legs.lexical_factors} if legs.lexical_factors else None
    if settings.fusion == "rrf":
        return reciprocal_rank_fusion(live, k=settings.rrf_k, factors=factors)
    total = sum(base[leg] for leg in live)
    # Weights renormalised over the legs that answered, so scores stay in [0, 1].
    return weighted_fusion(live, {leg: base[leg] / total for leg in live}, factors)


def fusion_weights(settings: SearchSettings, legs: Legs) -> dict[str, float]:
    """Each leg's configured weight; the lexical leg's is whole where the dense leg did not
    run (a language the model does not know): a dense weight of 1 must not leave such a
    query with nothing."""
    if not legs.dense_used:
        return {"dense": 0.0, "lexical": 1.0}
    return {"dense": settings.dense_weight, "lexical": 1.0 - settings.dense_weight}


def _distinct(hits: list[Hit]) -> list[Hit]:
    """``hits`` without a repeat of an earlier hit's text from the same source: copies of
    one file ingested from two folders under one relative name would fill the results
    with one passage."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for hit in hits:
        if (hit.source, hit.text) not in seen:
            seen.add((hit.source, hit.text))
            kept.append(hit)
    return kept


def _silent(stage: str, hits: int, elapsed_ms: float) -> None:
    """The stage hook used when nobody listens."""


def _lap(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
