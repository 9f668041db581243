"""Run an answer evaluation: ask each golden case, as ``knowhub ask`` does, and score the answer.

The runner takes anything with a collection handle's ``ask`` (:class:`Asker`), so this
layer never imports the app. Per case (each metric only where the case says what to expect):

- ``hit_type_accuracy``: 1 when the answer's ``hit_type`` is ``expected_hit_type``;
- ``answer_keyword_recall``: the share of ``expected_keywords`` in the answer's text;
  ``keywords_present``: 1 when all of them are;
- ``must_not_say_compliance``: 1 when the answer contains none of ``must_not_say``;
- ``citation_precision`` / ``citation_recall``: the distinct sources its valid ``[n]``
  citations name, against ``expected_sources``;
- ``source_first``: 1 when the answer's first source is an expected one; ``right_place``: 1
  when it cites an expected source at ``expected_section`` / ``expected_page``
  (:mod:`knowhub.eval.answer_metrics`);
- ``near_miss_refused`` (cases expecting ``insufficient_context``) and
  ``answerable_refused`` (the others): 1 when the answer refused, or said what the documents
  do not mention;
- ``faithfulness``: :mod:`knowhub.eval.faithfulness` (answers that used sources);
- with a :class:`Judge`, its LLM-judged metrics (:mod:`knowhub.eval.judge`).

Overall and per group (the case's ``group``, by default its golden file's stem), each is the
mean over the cases that have it. Latency: ``first_token`` (from the question to the first
piece of answer text) and ``total`` (to the whole answer), p50/p95.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from knowhub.answer.events import Answer, AnswerEvent, End, Token
from knowhub.config import VerificationSettings
from knowhub.errors import ConfigError, KnowhubError
from knowhub.eval.answer_metrics import is_refusal, keywords_present, right_place, source_first
from knowhub.eval.faithfulness import faithfulness
from knowhub.eval.golden import AnswerCase
from knowhub.eval.metrics import citation_scores, keyword_recall, latency_summary, means, said
from knowhub.lang import detect_language
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder

__all__ = [
    "ANSWER_METRICS",
    "CEILINGS",
    "JUDGED_METRICS",
    "AnswerRun",
    "Asker",
    "CaseResult",
    "Judge",
    "Scoring",
    "check_sources",
    "cited_sources",
    "run_answers",
    "score_answer",
]

JUDGED_METRICS = ("llm_faithfulness", "answer_relevancy", "context_precision")
ANSWER_METRICS = (
    "hit_type_accuracy",
    "answer_keyword_recall",
    "keywords_present",
    "must_not_say_compliance",
    "citation_precision",
    "citation_recall",
    "source_first",
    "right_place",
    "near_miss_refused",
    "answerable_refused",
    "faithfulness",
    *JUDGED_METRICS,
)
"""Every metric an answer report can hold (the judged ones only with an LLM)."""
CEILINGS = frozenset({"answerable_refused"})
"""Metrics where lower is better: a gate's number for them is a maximum."""


class Asker(Protocol):
    """What the runner needs of a collection's handle (``knowhub.collection.Collection``)."""

    def ask(self, question: str) -> Iterable[AnswerEvent]: ...


class Judge(Protocol):
    """LLM-judged metrics of one answer (:class:`knowhub.eval.judge.RagasJudge`)."""

    def score(self, question: str, answer: str, contexts: Sequence[str]) -> dict[str, float]: ...


@dataclass(frozen=True)
class Scoring:
    """How answers are scored: verification's thresholds and the collection's embedder
    (faithfulness), and the LLM judge (None: offline metrics only)."""

    verification: VerificationSettings
    embedder: Embedder | None = None
    judge: Judge | None = None


@dataclass
class CaseResult:
    """One case's answer and its scores; ``problems`` say in words what fell short."""

    case: AnswerCase
    hit_type: str
    answer: str
    cited: list[str]
    metrics: dict[str, float]
    latency_ms: dict[str, float]
    problems: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)  # the must_not_say phrases it said
    flagged: list[str] = field(default_factory=list)  # sentences not (fully) supported
    first_source: str | None = None
    refused: bool = False
    not_mentioned: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        case = self.case
        return {
            "qid": case.qid,
            "group": case.group,
            "query": case.text,
            "expected_hit_type": case.hit_type,
            "hit_type": self.hit_type,
            "refused": self.refused,
            "not_mentioned": self.not_mentioned,
            "answer": self.answer,
            "first_source": self.first_source,
            "cited": self.cited,
            "expected_sources": list(case.sources),
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "problems": self.problems,
            "violations": self.violations,
            "flagged": self.flagged,
            "latency_ms": {k: round(v, 3) for k, v in self.latency_ms.items()},
        }


@dataclass
class AnswerRun:
    """Scores of one answer evaluation, ready to become ``report.json`` (``kind: answers``)."""

    name: str
    source: Path
    collection: str
    cases: list[CaseResult]
    context: dict[str, Any] = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def metrics(self) -> dict[str, float]:
        """Mean of each metric over the cases that have it."""
        return means([c.metrics for c in self.cases], ANSWER_METRICS)

    def group_of(self, case: CaseResult) -> str:
        """The case's group: its own, else the run's name."""
        return case.case.group or self.name

    @property
    def groups(self) -> dict[str, dict[str, float]]:
        """Each group's metrics (as :attr:`metrics`), groups in the order first met."""
        rows: dict[str, list[dict[str, float]]] = {}
        for case in self.cases:
            rows.setdefault(self.group_of(case), []).append(case.metrics)
        return {group: means(found, ANSWER_METRICS) for group, found in rows.items()}

    def group_sizes(self) -> dict[str, dict[str, int]]:
        """Each group's cases: all of them and the answerable ones."""
        sizes: dict[str, dict[str, int]] = {}
        for case in self.cases:
            size = sizes.setdefault(self.group_of(case), {"cases": 0, "answerable": 0})
            size["cases"] += 1
            size["answerable"] += case.case.answerable
        return sizes

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "answers",
            "name": self.name,
            "split": "answers",
            "source": str(self.source),
            "collection": self.collection,
            "queries": len(self.cases),
            "context": self.context,
            "created": self.created,
            "metrics": _rounded(self.metrics),
            "groups": {
                group: {**self.group_sizes()[group], "metrics": _rounded(metrics)}
                for group, metrics in self.groups.items()
            },
            "must_not_say_violations": sum(len(c.violations) for c in self.cases),
            "latency_ms": latency_summary([c.latency_ms for c in self.cases]),
        }
        if per_query:
            out["per_query"] = [c.to_dict() for c in self.cases]
        return out


def _rounded(metrics: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 6) for k, v in metrics.items()}


def check_sources(
    cases: Sequence[AnswerCase], sources: Collection[str], path: Path, collection: str
) -> None:
    """Every expected source must be in the collection, else it could never be cited."""
    example = next(iter(sorted(sources)), "none: the collection is empty")
    for case in cases:
        for expected in case.sources:
            if expected not in sources:
                raise ConfigError(
                    f'{path}:{case.line}: case {case.qid!r}: "expected_sources" names '
                    f"{expected!r}, which is not in collection {collection!r} (its sources look "
                    f"like {example!r}); give paths relative to the folder ingested"
                )


def run_answers(
    asker: Asker,
    cases: Sequence[AnswerCase],
    scoring: Scoring,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[CaseResult]:
    """Ask every case through ``asker`` (a collection's handle) and score its answer."""
    results = []
    for done, case in enumerate(cases, start=1):
        answer, latency = _ask(asker, case.text)
        results.append(score_answer(case, answer, latency, scoring))
        if progress is not None:
            progress(done, len(cases), case.qid)
    return results


def _ask(asker: Asker, question: str) -> tuple[Answer, dict[str, float]]:
    clock = time.perf_counter()
    first: float | None = None
    for event in asker.ask(question):
        if isinstance(event, Token) and first is None:
            first = (time.perf_counter() - clock) * 1000.0
        if isinstance(event, End):
            total = (time.perf_counter() - clock) * 1000.0
            return event.answer, {"first_token": total if first is None else first, "total": total}
    raise KnowhubError(f"the answer to {question!r} ended without its end event")


def score_answer(
    case: AnswerCase, answer: Answer, latency_ms: dict[str, float], scoring: Scoring
) -> CaseResult:
    """Score ``answer`` against what ``case`` expects (see the module's docstring)."""
    cited = cited_sources(answer)
    result = CaseResult(case, answer.hit_type, answer.text, cited, {}, latency_ms)
    result.first_source = answer.sources[0].source if answer.sources else None
    if case.hit_type is not None:
        right = answer.hit_type == case.hit_type
        result.metrics["hit_type_accuracy"] = float(right)
        result.problems += (
            [] if right else [f"hit_type {answer.hit_type}, expected {case.hit_type}"]
        )
    _refusal(result, answer)
    _keywords(result, answer)
    if case.must_not_say:
        result.violations = said(case.must_not_say, answer.text)
        result.metrics["must_not_say_compliance"] = float(not result.violations)
        result.problems += [f"said {phrase!r}" for phrase in result.violations]
    if case.sources:
        precision, recall = citation_scores(cited, case.sources)
        result.metrics |= {"citation_precision": precision, "citation_recall": recall}
        if recall < 1.0:
            result.problems.append(f"cites {', '.join(cited) or 'nothing'}")
        _placed(result, answer)
    _faithfulness(result, answer, scoring)
    if scoring.judge is not None and answer.hit_type == "rag":
        contexts = [hit.text for hit in answer.sources]
        result.metrics |= scoring.judge.score(answer.question, answer.text, contexts)
    return result


def _keywords(result: CaseResult, answer: Answer) -> None:
    keywords = result.case.keywords
    if not keywords:
        return
    result.metrics["answer_keyword_recall"] = keyword_recall(keywords, [answer.text])
    result.metrics["keywords_present"] = keywords_present(result.case, answer)
    missing = [k for k in keywords if not said([k], answer.text)]
    result.problems += [f"missing keyword {k!r}" for k in missing]


def _refusal(result: CaseResult, answer: Answer) -> None:
    """Whether the answer refused, scored as the case expects (a near miss should)."""
    result.refused, result.not_mentioned = is_refusal(answer), list(answer.not_mentioned)
    metric = "answerable_refused" if result.case.answerable else "near_miss_refused"
    result.metrics[metric] = float(result.refused)
    if result.refused and result.case.answerable:
        terms = ", ".join(answer.not_mentioned)
        why = answer.hit_type + (f", not mentioned: {terms}" if terms else "")
        result.problems.append(f"refused an answerable question ({why})")


def _placed(result: CaseResult, answer: Answer) -> None:
    """Where the answer's sources are: its first one, and the place it cites."""
    checks = [source_first(result.case, answer)]
    if result.case.section is not None or result.case.pages is not None:
        checks.append(right_place(result.case, answer))
    for metric, (score, problem) in zip(("source_first", "right_place"), checks, strict=False):
        result.metrics[metric] = score
        result.problems += [problem] if problem else []


def cited_sources(answer: Answer) -> list[str]:
    """The distinct sources the answer's valid ``[n]`` citations name, first cited first."""
    hits: Sequence[Hit] = answer.sources
    valid = [n for n in answer.citations.cited if 1 <= n <= len(hits)]
    return list(dict.fromkeys(hits[n - 1].source for n in valid))


def _faithfulness(result: CaseResult, answer: Answer, scoring: Scoring) -> None:
    if answer.hit_type != "rag":
        return  # an FAQ answer or a refusal used no source to be faithful to
    language = detect_language(answer.question)
    score, found = faithfulness(
        answer.text, answer.sources, scoring.verification, scoring.embedder, language
    )
    if score is None:
        return
    result.metrics["faithfulness"] = score
    result.flagged = [check.text for check in found.flagged]
    if result.flagged:
        result.problems.append(
            f"{len(result.flagged)} sentence(s) not supported by their citations"
        )
