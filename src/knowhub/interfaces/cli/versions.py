"""``knowhub versions``: build a collection again beside the active one, gate it, switch."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from knowhub.errors import ConfigError
from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.progress import ingest_progress
from knowhub.interfaces.render import render_table
from knowhub.interfaces.terminal import echo
from knowhub.versions.build import BuildReport, build_version
from knowhub.versions.gate import gate_check
from knowhub.versions.record import Version
from knowhub.versions.switch import (
    VersionRow,
    activate_version,
    drop_version,
    list_versions,
    rollback_version,
)

if TYPE_CHECKING:  # annotations only: `--help`, `--version` and the other commands skip it
    from knowhub.app import App

__all__ = ["versions"]

_COLLECTION = click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)


@click.group()
def versions() -> None:
    """Knowledge-base versions: rebuild a collection with another embedder or chunking
    beside the active version, check it, then switch atomically (and back)."""


@versions.command("build")
@_COLLECTION
@click.option("--embedder", metavar="NAME", help="Embedder provider (default: the configured).")
@click.option("--chunk-size", type=click.IntRange(50, 20000), help="Chunk size (chunking.unit).")
@click.option(
    "--chunk-overlap",
    type=click.IntRange(0),
    help="Chunk overlap (default: the configured share of the chunk size).",
)
@click.option("--gate", is_flag=True, help="Run the eval gate on the new version.")
@click.option(
    "--golden",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Golden file for --gate (default: ./golden.json, else DATA_DIR/golden.json).",
)
@click.option("--activate", is_flag=True, help="Activate the new version once built (and passed).")
@click.option(
    "--resume",
    type=click.IntRange(2),
    metavar="VERSION",
    help="Finish VERSION, whose build was interrupted or failed, as it was begun.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def build(
    obj: CliContext,
    collection: str | None,
    embedder: str | None,
    chunk_size: int | None,
    chunk_overlap: int | None,
    gate: bool,
    golden: Path | None,
    activate: bool,
    resume: int | None,
    as_json: bool,
) -> None:
    """Build a new version from the active version's files; queries keep being answered
    by the active one meanwhile. A build that was stopped (interrupted in `versions list`)
    goes on with --resume, its documents already built kept. Exit status 1 if a file
    failed or the gate failed."""
    app = obj.writer("build versions")
    check = gate_check(app, collection, _golden(app, golden)) if gate else None
    with ingest_progress(app.settings.ingest, "building") as progress:
        report = build_version(
            app, collection, embedder, chunk_size, chunk_overlap, check, activate, progress, resume
        )
    emit(report.to_dict() if as_json else _render_build(report), as_json)
    if not report.ok:
        sys.exit(1)


@versions.command("list")
@click.option("--collection", "-c", help="Only this collection (default: every one).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def list_command(obj: CliContext, collection: str | None, as_json: bool) -> None:
    """Each version: active (*), embedder, chunk size, documents, chunks, state, gate."""
    rows = list_versions(obj.app(), collection)
    emit([r.to_dict() for r in rows] if as_json else _render_rows(rows), as_json)


@versions.command("activate")
@_COLLECTION
@click.argument("version", type=click.IntRange(1))
@click.option("--force", is_flag=True, help="Activate even a failed or unfinished version.")
@click.pass_obj
def activate(obj: CliContext, collection: str | None, version: int, force: bool) -> None:
    """Make VERSION the one that answers queries, atomically (no restart needed)."""
    app = obj.writer("switch versions")
    was = activate_version(app, collection, version, force)
    echo(_switched(app, collection, version, was))


@versions.command("rollback")
@_COLLECTION
@click.pass_obj
def rollback(obj: CliContext, collection: str | None) -> None:
    """Make the previously active version active again."""
    app = obj.writer("switch versions")
    now, was = rollback_version(app, collection)
    echo(_switched(app, collection, now, was))


@versions.command("drop")
@_COLLECTION
@click.argument("version", type=click.IntRange(1))
@click.option("--force", is_flag=True, help="Drop even a version still marked building.")
@click.pass_obj
def drop(obj: CliContext, collection: str | None, version: int, force: bool) -> None:
    """Delete VERSION and its data (never the active one)."""
    app = obj.writer("drop versions")
    gone = drop_version(app, collection, version, force)
    echo(f"dropped version {gone.number} of {app.resolve(collection).collection}")


def _golden(app: App, given: Path | None) -> Path:
    """The golden file a gate runs: the one given, else where `traces save-case` (./) or
    the web console (DATA_DIR) save cases."""
    if given is not None:
        return given
    for candidate in (Path("golden.json"), Path(app.settings.data_dir) / "golden.json"):
        if candidate.is_file():
            return candidate
    raise ConfigError(
        "--gate needs golden questions and found no golden.json here or in the data dir: "
        "give --golden FILE, or save cases with `knowhub traces save-case TRACE_ID --expected "
        'SOURCE` (a JSON list of {"query", "expected_sources"})'
    )


def _switched(app: App, collection: str | None, now: int, was: int) -> str:
    name = app.resolve(collection).collection
    if now == was:
        return f"version {now} of {name} was already active"
    return f"version {now} of {name} is active (was {was})"


def _describe(version: Version) -> str:
    size = (
        "chunks as configured"
        if version.chunking is None
        else (
            f"chunks of {version.chunking['size']} {version.chunking['unit']} "
            f"(overlap {version.chunking['overlap']})"
        )
    )
    return f"embedder {version.embedder_id} (dim {version.dim}), {size}"


def _render_build(report: BuildReport) -> str:
    version = report.version
    lines = [
        f"built version {version.number} of {report.collection} from version {report.base}: "
        f"{len(report.added)} documents, {report.chunks} chunks ({report.embedded} embedded), "
        f"{report.faq} FAQ entries in {report.seconds:.1f} s",
        f"  {_describe(version)}",
    ]
    lines += [f"  skipped {source}: its file is gone" for source in report.missing]
    lines += [f"  failed {source}: {reason}" for source, reason in report.failed]
    if report.gate is not None:
        gate = report.gate
        lines.append(f"gate {gate.result.key} ({gate.golden}, {gate.queries} queries):")
        rows = [("metric", f"v{gate.compared_with} (active)", f"v{version.number} (new)", "min")]
        for metric, value in gate.metrics.items():
            minimum = gate.result.thresholds.get(metric)
            old = gate.compared_metrics.get(metric)
            rows.append(
                (
                    metric,
                    "-" if old is None else f"{old:.4f}",
                    f"{value:.4f}",
                    "" if minimum is None else f"{minimum:.3f}",
                )
            )
        lines += [f"  {line}" for line in render_table(rows).splitlines()]
        if gate.compared_error:
            lines.append(f"  (v{gate.compared_with} not measured: {gate.compared_error})")
        verdict = "passed" if gate.result.passed else "FAILED: version marked failed"
        lines.append(f"gate {gate.result.key}: {verdict}")
        lines += [f"  {failure}" for failure in gate.result.failures]
    if report.activated:
        lines.append(f"version {version.number} of {report.collection} is active")
    else:
        lines.append(
            f"activate it with `knowhub versions activate --collection "
            f"{report.collection} {version.number}`"
            if report.ok
            else "not activated"
        )
    return "\n".join(lines)


def _render_rows(rows: list[VersionRow]) -> str:
    if not rows:
        return "no collections yet: run `knowhub ingest PATH`"
    table = [
        (
            "collection",
            "version",
            "embedder",
            "chunk size",
            "documents",
            "chunks",
            "state",
            "gate",
            "created",
        )
    ]
    for row in rows:
        v = row.version
        mark = "*" if row.active else ("<" if row.previous else "")
        gate = "-" if v.gate is None else ("passed" if v.gate["passed"] else "failed")
        table.append(
            (
                row.collection,
                f"{v.number}{mark}",
                v.embedder_id,
                "-" if v.chunk_size is None else str(v.chunk_size),
                "-" if row.documents is None else str(row.documents),
                "-" if row.chunks is None else str(row.chunks),
                row.state,
                gate,
                v.created_at,
            )
        )
    return render_table(table) + "\n(* active; < where `knowhub versions rollback` returns)"
