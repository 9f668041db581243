"""The ``knowhub`` command line: parse, call :class:`~knowhub.app.App`, format.

Results go to stdout; progress, logs and errors go to stderr. Any knowhub
error becomes a one-line message and exit status 1 (2 for usage errors);
tracebacks only with ``--debug``.
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import click

from knowhub.interfaces.cli_common import _Context, _emit, _errors
from knowhub.interfaces.progress import ingest_progress
from knowhub.interfaces.render import (
    explain_hits,
    render_chunk,
    render_collections,
    render_documents,
    render_hits,
    render_report,
    render_search_trace,
)
from knowhub.validate import parse_key_values

if TYPE_CHECKING:  # ingest (loaders, worker pools) loads only for `ingest`: cold start
    from knowhub.ingest.pipeline import IngestReport

__all__ = ["cli", "main"]

log = logging.getLogger("knowhub")


class _LazyGroup(click.Group):
    """The group whose other modules' commands load when one is run (or help is asked):
    a search no longer imports versions', eval's, bench's or the server's (~0.1 s)."""

    _LAZY: ClassVar[dict[str, str]] = {
        "ask": "cli_ask:ask",
        "bench": "cli_bench:bench",
        "export": "cli_bundle:export_command",
        "import": "cli_bundle:import_command",
        "verify": "cli_bundle:verify",
        "eval": "cli_eval:eval_command",
        "faq": "cli_faq:faq",
        "serve": "cli_serve:serve",
        "traces": "cli_traces:traces",
        "versions": "cli_versions:versions",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._LAZY and cmd_name not in self.commands:
            module, name = self._LAZY[cmd_name].split(":")
            command = getattr(importlib.import_module(f"knowhub.interfaces.{module}"), name)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the index lives (default ./data, or KNOWHUB_DATA_DIR).",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML settings file (default ./knowhub.yaml if present, or KNOWHUB_CONFIG).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.version_option(package_name="knowhub")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None, config: Path | None, debug: bool) -> None:
    """knowhub: ingest your documents, then search them with citations."""
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = _Context(data_dir, config, debug)
    ctx.call_on_close(lambda: ctx.obj._app and ctx.obj._app.close())


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--collection", "-c", help="Collection to ingest into (default: 'default').")
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata on every chunk, kept by later runs until changed; KEY= removes it.",
)
@click.option("--include", multiple=True, metavar="GLOB", help="Only files matching (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip files matching (repeatable).")
@click.option("--prune", is_flag=True, help="Remove documents whose files are gone.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def ingest(
    obj: _Context,
    paths: tuple[Path, ...],
    collection: str | None,
    tags: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    prune: bool,
    as_json: bool,
) -> None:
    """Index files or folders (recursively); unchanged files are skipped.

    Progress goes to stderr in chunks embedded, with a rate and an ETA: a line redrawn on a
    terminal, else a line every ingest.progress_interval_s seconds.

    Ctrl-C (or SIGTERM) stops within moments: documents written so far are kept, whole,
    and a re-run goes on from there."""
    from knowhub.ingest.pipeline import IngestStopped

    with _errors(obj), _stoppable() as stop:
        app = obj.app()
        exclusions = [*app.settings.ingest.exclude, *exclude]
        try:
            with ingest_progress(app.settings.ingest) as progress:
                report = app.ingest(
                    list(paths),
                    collection,
                    parse_key_values(tags, "--tag", empty=True),
                    include=list(include),
                    exclude=exclusions,
                    prune=prune,
                    progress=progress,
                )
        except IngestStopped as stopped:
            report = stopped.report
            _emit(report.to_dict() if as_json else render_report(report), as_json)
            click.echo(f"stopped: {report.stop_summary()}; re-run to continue", err=True)
            sys.exit(128 + stop.signum)
        except KeyboardInterrupt:  # before or after the documents' loop
            click.echo("stopped; re-run to continue", err=True)
            sys.exit(128 + stop.signum)
        _emit(report.to_dict() if as_json else render_report(report), as_json)
        for _, warning in report.warnings:  # indexed, but the user has something to fix
            click.echo(f"warning: {warning}", err=True)
        _exit_for(report)


@cli.command()
@click.argument("query")
@click.option("-k", "--top-k", type=int, help="Number of hits (1-100, default 5).")
@click.option("--collection", "-c", help="Collection to search (default: 'default').")
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE", help="Metadata filter.")
@click.option("--min-score", type=float, help="Drop hits whose relevance (0-1) is below this.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of hits.")
@click.option(
    "--explain", is_flag=True, help="Show each hit's lexical, dense, fused and rerank ranks."
)
@click.pass_obj
def search(
    obj: _Context,
    query: str,
    top_k: int | None,
    collection: str | None,
    filters: tuple[str, ...],
    min_score: float | None,
    as_json: bool,
    explain: bool,
) -> None:
    """Hybrid (dense + BM25) search with citations."""
    with _errors(obj):
        result = obj.app().search(
            query, collection, top_k, parse_key_values(filters, "--filter"), min_score
        )
        why = explain_hits(result) if explain else None
        if as_json:
            hits = [h.to_dict() for h in result.hits]
            for hit, reasons in zip(hits, why or [], strict=False):
                hit["explain"] = reasons
            _emit(hits, True)
        else:
            trace = f"\n\n{render_search_trace(result)}" if explain else ""
            _emit(render_hits(result.hits, why) + trace, False)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def collections(obj: _Context, as_json: bool) -> None:
    """List collections with their document and chunk counts."""
    with _errors(obj):
        infos = obj.app().collections()
        _emit([vars(i) for i in infos] if as_json else render_collections(infos), as_json)


@cli.command()
@click.option("--collection", "-c", help="Collection (default: 'default').")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def docs(obj: _Context, collection: str | None, as_json: bool) -> None:
    """List the documents of a collection."""
    with _errors(obj):
        records = obj.app().documents(collection)
        _emit([vars(r) for r in records] if as_json else render_documents(records), as_json)


@cli.command()
@click.argument("chunk_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def show(obj: _Context, chunk_id: str, as_json: bool) -> None:
    """Show one chunk in full, with its citation."""
    with _errors(obj):
        hits = obj.app().chunk(chunk_id)
        _emit([h.to_dict() for h in hits] if as_json else render_chunk(hits), as_json)


@cli.command()
@click.argument("path_or_doc_hash")
@click.option("--collection", "-c", help="Collection (default: 'default').")
@click.option(
    "--all-matches", is_flag=True, help="Remove every document a doc-hash prefix matches."
)
@click.pass_obj
def remove(obj: _Context, path_or_doc_hash: str, collection: str | None, all_matches: bool) -> None:
    """Remove a document (by file path, source or doc-hash prefix) and all its chunks.

    A doc-hash prefix is 8 or more hex digits; one matching several documents removes none
    and lists them, unless --all-matches is given."""
    with _errors(obj):
        removed = obj.app().remove(path_or_doc_hash, collection, all_matches=all_matches)
        for record in removed:
            click.echo(f"removed {record.source} ({record.chunk_count} chunks)")


@dataclass
class _Stop:
    signum: int = signal.SIGINT  # the signal that stopped the command


@contextmanager
def _stoppable() -> Iterator[_Stop]:
    """Have SIGTERM raise KeyboardInterrupt, as Ctrl-C does, so that cleanup runs (worker
    processes stopped, the run's trace written) instead of the process vanishing."""
    stop = _Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop  # signal handlers belong to the main thread (an embedding caller's)
        return

    def interrupt(signum: int, _frame: object) -> None:
        stop.signum = signum
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_for(report: IngestReport) -> None:
    if not report.ok:
        sys.exit(1)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="knowhub")


# The commands kept in their own modules.
