"""Run an evaluation: index the corpus (cached by content hash), search, score, aggregate.

The runner takes anything shaped like a collection's handle (see :class:`Searcher`), so this
layer never imports the app. Metrics per query are those of :mod:`knowhub.eval.metrics`;
a chunk ranking becomes a document ranking by source, each document at its best chunk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from knowhub.errors import ConfigError, IngestError, KnowhubError
from knowhub.eval.metrics import (
    hit_rate_at,
    keyword_recall,
    latency_summary,
    means,
    mrr_at,
    ndcg_at,
    recall_at,
)
from knowhub.eval.sets import EvalSet, JudgedQuery
from knowhub.models import DocumentRecord, Hit

__all__ = [
    "METRICS",
    "EvalResult",
    "IngestOutcome",
    "Progress",
    "QueryResult",
    "SearchOutcome",
    "Searcher",
    "check_judgments",
    "index_corpus",
    "run_queries",
    "score_query",
]

METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "hit_rate@10", "keyword_recall")
"""Every metric a report can hold; ``keyword_recall`` only for queries with keywords."""

Progress = Callable[[int, int, str], None]
"""Called as ``progress(done, total, qid)`` as queries are searched."""

IngestHook = Callable[[Any], None]
"""An ingest's progress callback (``knowhub.ingest.progress.Progress``), passed through to
:meth:`Searcher.ingest` as is: this layer cannot name the ingest layer's types."""


class SearchOutcome(Protocol):
    @property
    def hits(self) -> Sequence[Hit]: ...
    @property
    def timings_ms(self) -> Mapping[str, float]: ...


class IngestOutcome(Protocol):
    @property
    def added(self) -> Sequence[str]: ...
    @property
    def updated(self) -> Sequence[str]: ...
    @property
    def unchanged(self) -> Sequence[str]: ...
    @property
    def removed(self) -> Sequence[str]: ...
    @property
    def failed(self) -> Sequence[tuple[str, str]]: ...
    @property
    def embedded(self) -> int: ...
    @property
    def seconds(self) -> float: ...


class Searcher(Protocol):
    """What the runner needs of a collection's handle (:class:`knowhub.collection.Collection`)."""

    def ingest(
        self,
        paths: Sequence[Path],
        *,
        prune: bool = False,
        progress: IngestHook | None = None,
    ) -> IngestOutcome: ...

    def search(self, query: str, top_k: int | None = None) -> SearchOutcome: ...

    def documents(self) -> Sequence[DocumentRecord]: ...

    def chunk(self, chunk_id: str) -> Sequence[Hit]: ...


@dataclass
class QueryResult:
    """One query's scores, its top ranked ids and what each search stage took."""

    qid: str
    query: str
    metrics: dict[str, float]
    ranked: list[str]
    relevant: dict[str, int]
    first_relevant_rank: int | None
    latency_ms: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "qid": self.qid,
            "query": self.query,
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "ranked": self.ranked,
            "relevant": self.relevant,
            "first_relevant_rank": self.first_relevant_rank,
            "latency_ms": {k: round(v, 3) for k, v in self.latency_ms.items()},
        }


@dataclass
class EvalResult:
    """Scores of one run over an :class:`EvalSet`, ready to become ``report.json``."""

    evalset: EvalSet
    collection: str
    top_k: int
    queries: list[QueryResult]
    ingest: dict[str, Any] | None = None
    context: dict[str, Any] = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def metrics(self) -> dict[str, float]:
        """Mean of each metric over the queries that have it."""
        return means([q.metrics for q in self.queries], METRICS)

    @property
    def latency_ms(self) -> dict[str, dict[str, float]]:
        """p50/p95 per search stage (over the queries that ran it), plus ``total``."""
        return latency_summary([query.latency_ms for query in self.queries])

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        evalset = self.evalset
        out: dict[str, Any] = {
            "name": evalset.name,
            "split": evalset.split,
            "source": str(evalset.source),
            "collection": self.collection,
            "top_k": self.top_k,
            "queries": len(self.queries),
            "documents": evalset.documents,
            "params": evalset.params,
            "context": self.context,
            "created": self.created,
            "ingest": self.ingest,
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "latency_ms": self.latency_ms,
        }
        if per_query:
            out["per_query"] = [q.to_dict() for q in self.queries]
        return out


def index_corpus(
    searcher: Searcher, evalset: EvalSet, collection: str, progress: IngestHook | None = None
) -> dict[str, Any] | None:
    """Ingest the set's corpus folder (pruning what is gone); None when it has none.

    Unchanged files cost nothing, so a second run embeds nothing. A document that fails
    to ingest is an error: it could never be found, which would read as a low score.
    """
    if evalset.corpus_dir is None:
        return None
    report = searcher.ingest([evalset.corpus_dir], prune=True, progress=progress)
    if report.failed:
        reasons = "; ".join(f"{source}: {reason}" for source, reason in report.failed[:3])
        raise IngestError(
            f"{len(report.failed)} documents of {evalset.name} failed to ingest into "
            f"{collection!r}, so they could never be found: {reasons}"
        )
    return {
        "added": len(report.added),
        "updated": len(report.updated),
        "unchanged": len(report.unchanged),
        "removed": len(report.removed),
        "embedded": report.embedded,
        "seconds": round(report.seconds, 3),
    }


def check_judgments(searcher: Searcher, evalset: EvalSet, collection: str) -> None:
    """Every expected source or chunk must be in the collection, else it could only score 0."""
    sources = {record.source for record in searcher.documents()}
    example = next(iter(sorted(sources)), "none: the collection is empty")
    for query in evalset.queries:
        where = f"{evalset.source}:{query.line}" if query.line else f"{evalset.source}"
        for expected in query.relevant:
            if query.unit == "source" and expected not in sources:
                raise ConfigError(
                    f"{where}: query {query.qid!r} expects source {expected!r}, which is not in "
                    f"collection {collection!r} (its sources look like {example!r}); give paths "
                    "relative to the folder ingested"
                )
            if query.unit == "chunk" and not _has_chunk(searcher, expected, collection):
                raise ConfigError(
                    f"{where}: query {query.qid!r} expects chunk {expected!r}, which is not in "
                    f"collection {collection!r}; copy ids from `knowhub search --json`"
                )


def _has_chunk(searcher: Searcher, chunk_id: str, collection: str) -> bool:
    try:
        return any(hit.collection == collection for hit in searcher.chunk(chunk_id))
    except KnowhubError:
        return False


def run_queries(
    searcher: Searcher,
    evalset: EvalSet,
    collection: str,
    top_k: int = 100,
    progress: Progress | None = None,
) -> EvalResult:
    """Search every judged query through ``searcher`` and score it."""
    if not 10 <= top_k <= 100:
        raise ConfigError(f"top_k must be between 10 and 100 for @10 metrics, got {top_k}")
    results = []
    for done, query in enumerate(evalset.queries, start=1):
        started = time.perf_counter()
        outcome = searcher.search(query.text, top_k)
        total = (time.perf_counter() - started) * 1000.0
        results.append(score_query(query, outcome.hits, {**outcome.timings_ms, "total": total}))
        if progress is not None:
            progress(done, len(evalset.queries), query.qid)
    return EvalResult(evalset, collection, top_k, results)


def score_query(
    query: JudgedQuery, hits: Sequence[Hit], latency_ms: Mapping[str, float]
) -> QueryResult:
    """Scores of one query's hits (ranked at the query's unit: sources or chunks)."""
    ids = [hit.source if query.unit == "source" else hit.chunk_id for hit in hits]
    ranked = list(dict.fromkeys(ids))  # a document ranks at its best chunk
    relevant = query.relevant
    metrics = {
        "ndcg@10": ndcg_at(ranked, relevant, 10),
        "recall@10": recall_at(ranked, relevant, 10),
        "recall@100": recall_at(ranked, relevant, 100),
        "mrr@10": mrr_at(ranked, relevant, 10),
        "hit_rate@10": hit_rate_at(ranked, relevant, 10),
    }
    if query.keywords:
        # What an agent reads: the text of the top 10 hits.
        metrics["keyword_recall"] = keyword_recall(query.keywords, [h.text for h in hits[:10]])
    first = next((i for i, doc in enumerate(ranked, start=1) if relevant.get(doc, 0) > 0), None)
    positives = {doc: grade for doc, grade in relevant.items() if grade > 0}
    return QueryResult(
        query.qid, query.text, metrics, ranked[:10], positives, first, dict(latency_ms)
    )
