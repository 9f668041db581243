"""Cross-lingual golden files from XQuAD: questions in one language, passages in another.

    python -m benchmarks.crosslingual --datasets ../shared/datasets --out data/xling [--limit N]

xquad-en, xquad-ru and xquad-zh are translations of the same SQuAD paragraphs and questions:
the three share paragraph ids (``<article>-<paragraph>``), question ids and qrels. That is
checked here, not assumed: every language must hold the same question ids judged against the
same paragraph ids, or the script stops naming the first difference.

Writes, under ``--out``:

- ``corpus/<lang>/<paragraph id>.md``: each language's 240 paragraphs, one file each (the same
  files ``knowhub eval`` writes for a BEIR folder), to ingest as one collection per language;
- ``golden/xling-<query lang>-<corpus lang>.json``: for all 9 pairs (6 cross-lingual, 3
  monolingual for comparison), a golden file whose queries are the query language's questions
  and whose ``expected_sources`` are the corpus language's ``<paragraph id>.md``;
- ``golden/xling-<query lang>-<corpus lang>-dev.json`` and ``-test.json``: the same questions
  split by article (XQuAD's 48 Wikipedia articles; paragraph ids are ``<article>-<n>``): even
  articles are the dev half, on which cross-lingual settings are chosen, odd ones the test
  half, which ``make eval`` gates. XQuAD has no other split; the corpus stays whole.

Then, e.g. for Chinese questions against the English passages::

    knowhub ingest data/xling/corpus/en -c xling-en
    knowhub eval data/xling/golden/xling-zh-en.json -c xling-en --json

``--limit N`` keeps N questions spread evenly over the question list (every article, not just
the first ones), the same N in every file. Output is deterministic: same input, same bytes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from knowhub.eval.beir import Dataset, load_dataset, materialize, safe_name

LANGS = ("en", "ru", "zh")
SPLITS = ("dev", "test")


def check_aligned(sets: Mapping[str, Dataset]) -> list[str]:
    """The question ids shared by every language, in the first language's file order.

    Raises ValueError when the languages differ in question ids, paragraph ids or in which
    paragraph a question is judged against: then a same-id pairing would be wrong.
    """
    first_lang, first = next(iter(sets.items()))
    doc_ids = {doc["_id"] for doc in first.corpus}
    for lang, other in sets.items():
        where = f"xquad-{lang} against xquad-{first_lang}"
        if {doc["_id"] for doc in other.corpus} != doc_ids:
            raise ValueError(f"{where}: the paragraph ids differ")
        if set(other.qrels) != set(first.qrels):
            raise ValueError(f"{where}: the judged question ids differ")
        for qid, relevant in first.qrels.items():
            if dict(other.qrels[qid]) != dict(relevant):
                raise ValueError(f"{where}: question {qid} is judged against other paragraphs")
    # queries.jsonl order groups questions by article; qrels is a dict in file order too.
    return [qid for qid in first.queries if qid in first.qrels]


def spread(qids: Sequence[str], limit: int) -> list[str]:
    """``limit`` ids evenly spaced over ``qids`` (all of them when limit is 0 or too big)."""
    if not limit or limit >= len(qids):
        return list(qids)
    return [qids[i * len(qids) // limit] for i in range(limit)]


def golden_entries(
    questions: Dataset, passages: Dataset, qids: Sequence[str]
) -> list[dict[str, Any]]:
    """One golden entry per question: its text in the question language, the relevant
    paragraphs as the corpus language's file names (``knowhub eval`` compares sources)."""
    known = {doc["_id"] for doc in passages.corpus}
    entries = []
    for qid in qids:
        relevant = sorted(doc for doc, grade in questions.qrels[qid].items() if grade > 0)
        missing = [doc for doc in relevant if doc not in known]
        if missing:
            raise ValueError(f"question {qid}: paragraph {missing[0]} not in the corpus")
        sources = [f"{safe_name(doc)}.md" for doc in relevant]
        entries.append({"id": qid, "query": questions.queries[qid], "expected_sources": sources})
    return entries


def article_split(entries: Sequence[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """The entries of ``split``: ``dev`` holds questions on even articles, ``test`` odd ones
    (the article is the paragraph id's first part, the same in every language)."""
    parity = {"dev": 0, "test": 1}[split]
    return [e for e in entries if int(e["expected_sources"][0].split("-")[0]) % 2 == parity]


def write_all(datasets: Path, out: Path, limit: int = 0) -> list[Path]:
    """Write every corpus folder and golden file; returns the golden files written."""
    sets = {lang: load_dataset(datasets / f"xquad-{lang}") for lang in LANGS}
    qids = spread(check_aligned(sets), limit)
    for lang, dataset in sets.items():
        materialize(dataset.corpus, out / "corpus" / lang)
    written = []
    for query_lang in LANGS:
        for corpus_lang in LANGS:
            entries = golden_entries(sets[query_lang], sets[corpus_lang], qids)
            name = f"xling-{query_lang}-{corpus_lang}"
            parts = {"": entries, **{f"-{s}": article_split(entries, s) for s in SPLITS}}
            for suffix, part in parts.items():
                written.append(_write(out / "golden" / f"{name}{suffix}.json", part))
    return written


def _write(path: Path, entries: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--datasets", type=Path, required=True, help="holds xquad-en/-ru/-zh")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="N questions, evenly spread")
    args = parser.parse_args()
    for path in write_all(args.datasets, args.out, args.limit):
        print(path)


if __name__ == "__main__":
    main()
