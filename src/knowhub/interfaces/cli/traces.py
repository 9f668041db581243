"""``knowhub traces``: what each search, answer and ingest did, and where its time went."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from knowhub.errors import QueryError
from knowhub.eval.golden import add_case
from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.terminal import echo
from knowhub.trace.record import Trace, preview
from knowhub.trace.report import parse_since, select, summarize, waterfall

__all__ = ["traces"]


@click.group(invoke_without_command=True)
@click.option(
    "--kind", type=click.Choice(["search", "answer", "chat", "ingest"]), help="Only this kind."
)
@click.option("--slow", "slow_ms", type=float, metavar="MS", help="Only runs slower than MS.")
@click.option("--errors", is_flag=True, help="Only runs that failed.")
@click.option("--since", metavar="WHEN", help="Only runs since 30m / 2h / 7d ago or an ISO date.")
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=20,
    show_default=True,
    help="Most recent runs listed.",
)
@click.option(
    "--tenant",
    metavar="NAME",
    help="Only runs whose data scope named tenant NAME ('*': runs of unrestricted callers).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (summary and runs).")
@click.pass_context
def traces(
    ctx: click.Context,
    kind: str | None,
    slow_ms: float | None,
    errors: bool,
    since: str | None,
    limit: int,
    tenant: str | None,
    as_json: bool,
) -> None:
    """List recent runs and summarise them: count, p50/p95 per stage, the slowest stage."""
    if ctx.invoked_subcommand is not None:
        return
    obj: CliContext = ctx.obj
    chosen = select(
        obj.app().traces(), kind, slow_ms, errors, parse_since(since) if since else None
    )
    if tenant is not None:
        chosen = [t for t in chosen if tenant in (t.scope or {}).get("tenants", ())]
    recent = chosen[-limit:][::-1]
    summary = summarize(chosen)
    if as_json:
        emit({"summary": summary, "traces": [t.to_dict() for t in recent]}, True)
    else:
        emit(_render(summary, recent), False)


@traces.command("show")
@click.argument("trace_id")
@click.option("--json", "as_json", is_flag=True, help="Print the trace as JSON.")
@click.pass_obj
def show(obj: CliContext, trace_id: str, as_json: bool) -> None:
    """One run as a stage waterfall (TRACE_ID or its first 6+ characters)."""
    trace = _find(obj, trace_id)
    emit(trace.to_dict() if as_json else waterfall(trace), as_json)


@traces.command("save-case")
@click.argument("trace_id")
@click.option(
    "--expected",
    required=True,
    metavar="SOURCE",
    help="The source that should have answered (as search results name it).",
)
@click.option(
    "--golden",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("golden.json"),
    show_default=True,
    help="Golden file to extend.",
)
@click.pass_obj
def save_case(obj: CliContext, trace_id: str, expected: str, golden: Path) -> None:
    """Turn a run's query into a regression case for `knowhub eval GOLDEN`."""
    trace = _find(obj, trace_id)
    if trace.kind == "ingest" or not trace.query:
        raise QueryError(f"trace {trace.trace_id} is an ingest run: it has no query to save")
    case, new = add_case(golden, trace.query, expected.strip(), trace.collection)
    verb = "added" if new else "updated"
    echo(f"{verb} {case} in {golden}: {trace.query!r} → {expected}")


def _find(obj: CliContext, trace_id: str) -> Trace:
    key = trace_id.strip()
    if len(key) < 6:
        raise QueryError(f"trace id {trace_id!r} is too short: give 6+ characters")
    found = [t for t in obj.app().traces() if t.trace_id.startswith(key)]
    if len(found) != 1:
        problem = "no trace" if not found else f"{len(found)} traces"
        raise QueryError(f"{problem} with id {trace_id!r}: list them with `knowhub traces`")
    return found[0]


def _render(summary: dict[str, object], recent: list[Trace]) -> str:
    if not summary["count"]:
        return "no traces match (traces are written to DATA_DIR/traces by every run)"
    total = summary["total_ms"]
    stages: dict[str, dict[str, float]] = summary["stages_ms"]  # type: ignore[assignment]
    table = [("stage", "runs", "p50 ms", "p95 ms")]
    table += [
        (stage, str(row["count"]), str(row["p50"]), str(row["p95"]))
        for stage, row in stages.items()
    ]
    lines = [
        f"{summary['count']} runs ({summary['errors']} failed): {summary['by_kind']}; total "
        f"p50 {total['p50']} ms, p95 {total['p95']} ms; slowest stage: "  # type: ignore[index]
        f"{summary['slowest_stage']}",
        "",
        *_columns(table, right=(1, 2, 3)),
        "",
        "recent runs:",
    ]
    runs = [
        (
            t.trace_id,
            t.started_at[:19],
            t.kind,
            t.interface,
            f"{t.duration_ms:.1f} ms",
            t.collection,
            _outcome(t),
        )
        for t in recent
    ]
    lines += [f"  {line}" for line in _columns(runs, right=(4,))]
    return "\n".join(lines)


def _outcome(trace: Trace) -> str:
    outcome = (trace.error and f"ERROR {preview(trace.error)}") or trace.hit_type or ""
    return "  ".join(part for part in (outcome, preview(trace.query) or "") if part)


def _columns(rows: Sequence[Sequence[str]], right: tuple[int, ...]) -> list[str]:
    """Rows as columns each as wide as its widest cell, two spaces apart (a 7-digit p95
    once ran into the column before it); columns in ``right`` are right-aligned."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
