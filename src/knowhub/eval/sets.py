"""What an evaluation runs: judged queries, and the corpus folder to index for them.

Two kinds of input become one :class:`EvalSet`: a BEIR folder (its corpus written as one
``<id>.md`` file per document, so a hit's ``source`` names the document) and a golden JSON
file (see :mod:`knowhub.eval.golden`) run against a collection that already exists.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from knowhub.errors import ConfigError
from knowhub.eval.beir import Dataset, load_dataset, materialize

__all__ = ["SUBSET_SUFFIX", "EvalSet", "JudgedQuery", "beir_set", "sample_dataset"]

SUBSET_SUFFIX = "@subset"
SEED = 0  # fixed: the same queries and documents every run, on every machine


@dataclass(frozen=True)
class JudgedQuery:
    """One query and what should be found for it.

    ``relevant`` maps ids to graded relevance; ids are hit sources when ``unit`` is
    ``"source"`` (a document ranks at its best chunk) and chunk ids when it is ``"chunk"``.
    ``line`` is where the query was defined (0 when unknown), for error messages.
    """

    qid: str
    text: str
    relevant: Mapping[str, int]
    unit: Literal["source", "chunk"] = "source"
    keywords: tuple[str, ...] = ()
    line: int = 0


@dataclass(frozen=True)
class EvalSet:
    """Judged queries plus where they came from.

    ``corpus_dir`` is the folder to ingest before searching (None: search the collection
    as it is). ``name`` keys gates and report folders: the data set's folder name, with
    ``@subset`` appended for a document subset, or a golden file's stem.
    """

    name: str
    source: Path
    queries: list[JudgedQuery]
    split: str | None = None
    corpus_dir: Path | None = None
    documents: int | None = None
    params: dict[str, int] = field(default_factory=dict)


def sample_dataset(dataset: Dataset, limit: int = 0, subset_docs: int = 0) -> Dataset:
    """A deterministic sample: ``limit`` judged queries and a corpus of ``subset_docs``.

    The corpus keeps every document judged for the kept queries, plus a seeded sample of
    the others up to ``subset_docs`` (0 = keep everything).
    """
    qids = sorted(dataset.qrels)
    if 0 < limit < len(qids):
        qids = sorted(random.Random(SEED).sample(qids, limit))
    qrels = {qid: dataset.qrels[qid] for qid in qids}
    corpus = dataset.corpus
    if subset_docs:
        judged = {doc for qid in qids for doc in qrels[qid]}
        if len(judged) > subset_docs:
            raise ConfigError(
                f"--subset-docs {subset_docs} is smaller than the {len(judged)} documents judged "
                "for the kept queries: raise it or lower --limit"
            )
        others = sorted(doc["_id"] for doc in corpus if doc["_id"] not in judged)
        extra = min(len(others), subset_docs - len(judged))
        keep = judged | set(random.Random(SEED).sample(others, extra))
        corpus = [doc for doc in corpus if doc["_id"] in keep]
    return Dataset(dataset.name, corpus, dataset.queries, qrels)


def beir_set(
    folder: Path, split: str, work_dir: Path, limit: int = 0, subset_docs: int = 0
) -> EvalSet:
    """Load a BEIR folder, sample it, and write its corpus to ``work_dir`` (one file per doc).

    Files in ``work_dir`` that are not part of this corpus are deleted, so an ingest with
    ``prune`` leaves exactly this corpus in the collection.
    """
    dataset = sample_dataset(load_dataset(folder, split), limit, subset_docs)
    stems = materialize(dataset.corpus, work_dir)
    for stale in work_dir.glob("*.md"):
        if stale.stem not in stems:
            stale.unlink()
    source_of = {doc_id: f"{stem}.md" for stem, doc_id in stems.items()}
    queries = [
        JudgedQuery(qid, dataset.queries[qid], {source_of[d]: g for d, g in judged.items()})
        for qid, judged in dataset.qrels.items()
    ]
    name = folder.name + (SUBSET_SUFFIX if subset_docs else "")
    params = {"limit": limit, "subset_docs": subset_docs, "seed": SEED}
    return EvalSet(name, folder, queries, split, work_dir, len(stems), params)
