"""Relevance against near misses: the calibration's ROC AUC with in-domain questions the
documents do not answer.

    python -m benchmarks.realdocs.near_misses --data-dir DIR [--collection realdocs]

``DIR`` holds the real-document corpus ingested as one collection (``make eval`` does it,
or ``knowhub --data-dir DIR ingest data/realdocs/corpus -c realdocs``). Every golden
question of ``benchmarks/realdocs/golden`` is asked as ``knowhub ask`` does. Answerable:
the cases with expected sources; unanswerable: the near misses. Printed: the ROC AUC of the
best source's ``relevance`` (what ``answer.min_evidence`` decides on), the share of each
kind refused, and the same for the answer itself (1 when it answers, 0 when it refuses),
which adds coverage (:mod:`knowhub.answer.coverage`) to relevance.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.relevance_calibration import auc

from knowhub import build_app, load_settings
from knowhub.answer.pipeline import collect

GOLDEN = Path(__file__).parent / "golden"


def _cases() -> list[dict[str, Any]]:
    return [case for path in sorted(GOLDEN.glob("*.json")) for case in json.loads(path.read_text())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--collection", default="realdocs")
    args = parser.parse_args(argv)
    settings = load_settings(overrides={"data_dir": str(args.data_dir)})
    app = build_app(settings)
    scores: dict[bool, list[float]] = {True: [], False: []}
    answered: dict[bool, list[float]] = {True: [], False: []}
    try:
        for case in _cases():
            answerable = bool(case.get("expected_sources"))
            answer = collect(app.collection(args.collection).ask(case["query"]))
            scores[answerable].append(float(answer["evidence"]))
            refused = answer["hit_type"] == "insufficient_context" or answer.get("not_mentioned")
            answered[answerable].append(0.0 if refused else 1.0)
    finally:
        app.close()
    floor = settings.answer.min_evidence
    for name, values in (("relevance", scores), ("answered", answered)):
        share = {
            k: sum(v < 0.5 if name == "answered" else v < floor for v in vs) / len(vs)
            for k, vs in values.items()
        }
        print(
            f"{name:10} ROC AUC {auc(values[True], values[False]):.3f}  "
            f"answerable {len(values[True])} refused {share[True]:.1%}  "
            f"near misses {len(values[False])} refused {share[False]:.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
