"""``knowhub eval``: retrieval quality on a BEIR folder or a golden file, or with
``--answers`` the quality of a golden file's answers, with gates.

Parse, call :mod:`knowhub.eval` with the :class:`~knowhub.app.App`, format. Files go to
``<data_dir>/eval/``: ``corpora/<collection>/`` (the BEIR corpus, one file per document),
``reports/<name>-<split>/`` (report.json, .md, .html; ``<name>-answers/`` for answers) and
``baselines/<name>-<split>.json``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from knowhub.checks import check_collection_name
from knowhub.errors import ConfigError
from knowhub.eval.answer_report import GROUP_COLUMNS, group_rows
from knowhub.eval.gate import bound, check_gate, find_gate
from knowhub.eval.golden import golden_set
from knowhub.eval.report import compare, load_report, write_reports
from knowhub.eval.runner import check_judgments, index_corpus, run_queries
from knowhub.eval.sets import EvalSet, beir_set
from knowhub.interfaces.cli.context import CliContext, emit, progress_bar
from knowhub.interfaces.cli.eval_answers import answer_report
from knowhub.interfaces.progress import ingest_progress
from knowhub.interfaces.terminal import echo

if TYPE_CHECKING:  # annotations only: `--help`, `--version` and the other commands skip it
    from knowhub.app import App

__all__ = ["eval_command"]


@click.command("eval")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--split", default="test", show_default=True, help="BEIR qrels split.")
@click.option("--collection", "-c", help="Collection to search (default: eval-<data set>).")
@click.option(
    "--top-k",
    type=click.IntRange(10, 100),
    default=100,
    show_default=True,
    help="Hits retrieved per query (recall@100 needs 100).",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for report.json/.md/.html (default: under <data_dir>/eval/reports).",
)
@click.option("--gate", is_flag=True, help="Exit 1 when a metric is below its eval.gates minimum.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A previous report.json to compare with (default: the saved baseline, if any).",
)
@click.option("--save-baseline", is_flag=True, help="Save this run as the baseline for NAME.")
@click.option(
    "--answers",
    is_flag=True,
    help="Ask the golden file's cases (or those of every *.json file of a folder) and score "
    "the answers (hit type, keywords, sources, place, refusals, citations, faithfulness, "
    "latency) instead of the retrieval.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=0,
    help="Evaluate N queries, a seeded sample (the same every run).",
)
@click.option(
    "--subset-docs",
    type=click.IntRange(min=0),
    default=0,
    help="Index N documents: those judged for the queries, plus a seeded sample.",
)
@click.pass_obj
def eval_command(
    obj: CliContext,
    dataset: Path,
    split: str,
    collection: str | None,
    top_k: int,
    report_dir: Path | None,
    gate: bool,
    as_json: bool,
    baseline: Path | None,
    save_baseline: bool,
    answers: bool,
    limit: int,
    subset_docs: int,
) -> None:
    """Measure retrieval quality on a BEIR folder or a golden JSON file.

    A BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) is indexed into its own
    collection first (unchanged documents cost nothing on later runs). A golden file (a
    JSON list of {"query", "expected_sources" | "expected_chunk_ids", "expected_keywords"})
    is run against --collection as it is. Reports nDCG@10, Recall@10/100, MRR@10, hit
    rate@10 and per-stage latency, and writes report.json, report.md and report.html.

    With --answers, each case of the golden file (or of every *.json file of a folder) is
    asked of --collection as `knowhub ask` asks it, and the answers are scored, overall and
    per group: hit-type accuracy, keyword recall and presence, must-not-say violations,
    expected source first, right place cited, near misses and answerable questions refused,
    citation precision/recall, faithfulness and first-token/total latency (LLM-judged
    faithfulness, answer relevancy and context precision with an LLM).
    """
    if (limit or subset_docs) and (answers or not dataset.is_dir()):
        raise click.UsageError("--limit and --subset-docs apply to BEIR folders only")
    app = obj.writer("index an evaluation corpus")
    work = app.settings.data_dir / "eval"
    if answers:
        report, slug = answer_report(app, dataset, collection)
    else:
        report, slug = _retrieval_report(app, dataset, split, collection, top_k, limit, subset_docs)
    if baseline or (work / "baselines" / f"{slug}.json").is_file():
        path = baseline or work / "baselines" / f"{slug}.json"
        report["baseline"] = compare(report, load_report(path), path)
    if gate and "gate" not in report:
        known = ", ".join(app.settings.eval.gates) or "none"
        groups = " (or NAME/GROUP for a group of answer cases)" if "groups" in report else ""
        raise ConfigError(
            f"no gate for {report['name']!r} or collection {report['collection']!r}{groups} "
            f"in eval.gates (configured: {known}); add one to knowhub.yaml (see "
            "knowhub.example.yaml)"
        )
    folder = report_dir or work / "reports" / slug
    write_reports(report, folder)
    if save_baseline:
        _save_baseline(report, work / "baselines" / f"{slug}.json")
    summary = {k: v for k, v in report.items() if k != "per_query"}
    summary["report_dir"] = str(folder)
    emit(summary if as_json else _render(summary), as_json)
    if gate and not report["gate"]["passed"]:
        echo(f"gate {report['gate']['key']} failed:", err=True)
        for failure in report["gate"]["failures"]:
            echo(f"  {failure}", err=True)
        sys.exit(1)


def _retrieval_report(
    app: App,
    dataset: Path,
    split: str,
    collection: str | None,
    top_k: int,
    limit: int,
    subset_docs: int,
) -> tuple[dict[str, Any], str]:
    """Index (a BEIR corpus), check the judgments, search and score: the report, gate
    checked when ``eval.gates`` has one, and its slug."""
    work = app.settings.data_dir / "eval"
    evalset, name = _evalset(app, dataset, split, collection, limit, subset_docs, work)
    with ingest_progress(app.settings.ingest, "indexing") as progress:
        ingest = index_corpus(app.collection(name), evalset, name, progress)
    check_judgments(app.collection(name), evalset, name)
    with progress_bar("searching") as progress:
        result = run_queries(app.collection(name), evalset, name, top_k, progress)
    result.ingest = ingest
    result.context = _context(app, name)
    report = result.to_dict()
    if app.settings.reranker.provider != "none":
        report["without_reranker"] = _without_reranker(app, evalset, name, top_k)
    found = find_gate(app.settings.eval.gates, [evalset.name, name])
    if found is not None:
        report["gate"] = check_gate(found[0], found[1], result.metrics).to_dict()
    return report, evalset.name + (f"-{evalset.split}" if evalset.split else "")


def _evalset(
    app: App, dataset: Path, split: str, collection: str | None, limit: int, docs: int, work: Path
) -> tuple[EvalSet, str]:
    if dataset.is_dir():
        folder = dataset.resolve()
        default = re.sub(r"[^a-z0-9_-]", "-", f"eval-{folder.name}".lower())[:57]
        name = check_collection_name(collection or default + ("-subset" if docs else ""))
        return beir_set(folder, split, work / "corpora" / name, limit, docs), name
    name = app.named(collection)
    return golden_set(dataset, name), name


def _without_reranker(app: App, evalset: EvalSet, name: str, top_k: int) -> dict[str, Any]:
    """The same queries with the reranker off, so its gain (or loss) shows beside it."""
    from knowhub.app import App

    reranker = app.settings.reranker.model_copy(update={"provider": "none"})
    settings = app.settings.model_copy(update={"reranker": reranker})
    # The same embedder (loaded once) and the same caller (an --as-token's data scope).
    plain = App(settings, app.runtime.embedder, app.interface, caller=app.caller)
    try:
        with progress_bar("searching without the reranker") as progress:
            result = run_queries(plain.collection(name), evalset, name, top_k, progress)
    finally:
        plain.close()
    return {"metrics": result.metrics, "latency_ms": result.latency_ms}


def _context(app: App, name: str) -> dict[str, Any]:
    settings = app.settings
    return {
        "embedder": settings.embedder.provider,
        "fusion": settings.search.fusion,
        # The version's own where `knowhub calibrate --golden` chose one.
        "dense_weight": app.collection(name).search_settings.dense_weight,
        "candidates": settings.search.candidates,
        "reranker": settings.reranker.provider,
    }


def _save_baseline(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = {k: v for k, v in report.items() if k not in ("baseline", "gate")}
    path.write_text(json.dumps(saved, ensure_ascii=False, indent=2), encoding="utf-8")
    echo(f"saved baseline {path}", err=True)


def _group_lines(summary: dict[str, Any]) -> list[str]:
    """An answer run's groups as a table: cases, answerable cases, GROUP_COLUMNS."""
    rows = group_rows(summary)
    if not rows:
        return []
    heads = ["group", "cases", "answerable", *GROUP_COLUMNS]
    widths = [max(len(head), *(len(row[i]) for row in rows)) for i, head in enumerate(heads)]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [heads, *rows]
    ]


def _render(summary: dict[str, Any]) -> str:
    split = f" ({summary['split']})" if summary.get("split") else ""
    docs = f", {summary['documents']} documents" if summary.get("documents") else ""
    noun = "cases" if summary.get("kind") == "answers" else "queries"
    lines = [
        f"{summary['name']}{split}: {summary['queries']} {noun}{docs}, "
        f"collection {summary['collection']}"
    ]
    if summary.get("ingest"):
        lines.append("ingest: " + ", ".join(f"{v} {k}" for k, v in summary["ingest"].items()))
    deltas = summary.get("baseline", {}).get("metrics", {})
    plain = summary.get("without_reranker", {}).get("metrics", {})
    thresholds = summary.get("gate", {}).get("thresholds", {})
    names = [*summary["metrics"], *(["must_not_say violations"] if "groups" in summary else [])]
    width = max([15, *(len(name) + 2 for name in names)])
    for metric, value in summary["metrics"].items():
        line = f"  {metric:<{width}}{value:.4f}"
        if metric in plain:
            line += f"  ({plain[metric]:.4f} without the reranker)"
        if metric in deltas:
            line += f"  ({deltas[metric]['delta']:+.4f} vs baseline)"
        if metric in thresholds:
            line += f"  gate {bound(metric)} {thresholds[metric]:.3f}"
        lines.append(line)
    lines += _group_lines(summary)
    if "must_not_say_violations" in summary:
        lines.append(f"  {'must_not_say violations':<{width}}{summary['must_not_say_violations']}")
    lines.append(f"  {'latency ms':<15}{'p50':>8}{'p95':>9}")
    for stage, values in summary["latency_ms"].items():
        lines.append(f"  {stage:<15}{values['p50']:>8.1f}{values['p95']:>9.1f}")
    if summary.get("gate"):
        verdict = "passed" if summary["gate"]["passed"] else "failed"
        lines.append(f"gate {summary['gate']['key']}: {verdict}")
    lines.append(f"report: {Path(summary['report_dir']) / 'report.html'}")
    return "\n".join(lines)
