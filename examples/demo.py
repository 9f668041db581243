"""Answer the sample questions in questions.yaml from an ingested examples/docs.

Run by ``make demo`` after ``knowhub ingest examples/docs``; prints each question's
top hits with citations and whether the expected source came first.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from knowhub import App, Hit, build_app, load_settings
from knowhub.interfaces.render import citation

HERE = Path(__file__).parent
QUESTIONS = HERE / "questions.yaml"
DOCS_PREFIX = "docs/"  # questions name sources relative to examples/; we ingest examples/docs


@dataclass(frozen=True)
class Answered:
    question: str
    language: str
    expected_source: str
    hits: list[Hit]

    @property
    def first_is_expected(self) -> bool:
        return bool(self.hits) and self.hits[0].source == self.expected_source


def load_questions(path: Path = QUESTIONS) -> list[dict[str, str]]:
    entries: list[dict[str, str]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return entries


def answer_all(app: App, top_k: int = 3) -> list[Answered]:
    """Search every sample question; sources are compared relative to examples/docs."""
    answered = []
    for entry in load_questions():
        expected = entry["expected_source"].removeprefix(DOCS_PREFIX)
        result = app.collection().search(entry["question"], top_k=top_k)
        answered.append(Answered(entry["question"], entry["language"], expected, result.hits))
    return answered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    args = parser.parse_args()
    app = build_app(load_settings(overrides={"data_dir": args.data_dir}))
    answered = answer_all(app)
    for item in answered:
        mark = "ok  " if item.first_is_expected else "MISS"
        print(f"\n[{mark}] ({item.language}) {item.question}")
        for rank, hit in enumerate(item.hits, start=1):
            snippet = " ".join(hit.text.split())[:110]
            print(f"   {rank}. {hit.score:.3f} {citation(hit)}\n      {snippet}…")
    firsts = sum(a.first_is_expected for a in answered)
    print(f"\n{firsts}/{len(answered)} questions: the expected source ranked first.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
