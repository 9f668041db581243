"""``knowhub ingest`` and ``knowhub remove``: what goes into the index and out of it."""

from __future__ import annotations

import dataclasses
import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from knowhub.interfaces.arguments import parse_key_values
from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.progress import ingest_progress
from knowhub.interfaces.render import render_report
from knowhub.interfaces.terminal import echo

if TYPE_CHECKING:  # ingest (loaders, worker pools) loads only when the command runs
    from knowhub.app import App
    from knowhub.config import Settings
    from knowhub.ingest.pipeline import IngestReport
    from knowhub.ingest.sources import RemoteSource

__all__ = ["ingest", "remove"]


@click.command()
@click.argument("paths", nargs=-1, metavar="PATHS_OR_URLS")
@click.option(
    "--collection",
    "-c",
    help="Collection to ingest into (default: the configured one, 'default' unless set).",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata on every chunk, kept by later runs until changed; KEY= removes it.",
)
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    help="Only files matching (repeatable); with a URL, only pages whose URL matches.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files matching (repeatable); with a URL, pages whose URL matches.",
)
@click.option(
    "--depth",
    type=click.IntRange(min=0),
    help="With a URL: follow links this many steps from the start page (default 3; 0: that "
    "page alone).",
)
@click.option(
    "--max-pages",
    type=click.IntRange(min=1),
    help="With a URL: ask for this many pages at most (default 1000).",
)
@click.option("--prune", is_flag=True, help="Remove documents whose files are gone.")
@click.option(
    "--failed",
    "list_failed",
    is_flag=True,
    help="List the files that failed to load, with why; they are not read again until they "
    "or the settings change.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--watch",
    is_flag=True,
    help="Then keep the collection in sync with PATHS until Ctrl-C: each burst of changes "
    "is re-ingested with --prune once it settles (server.watch_debounce_ms).",
)
@click.pass_obj
def ingest(
    obj: CliContext,
    paths: tuple[str, ...],
    collection: str | None,
    tags: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    depth: int | None,
    max_pages: int | None,
    prune: bool,
    list_failed: bool,
    as_json: bool,
    watch: bool,
) -> None:
    """Index files or folders (recursively); unchanged files are skipped, and so are files
    that failed to load before and have not changed since (--failed lists them).

    Progress goes to stderr in chunks embedded, with a rate and an ETA: a line redrawn on a
    terminal, else a line every ingest.progress_interval_s seconds. A file not read within
    ingest.max_seconds_per_file, or with more pages to OCR than ingest.ocr_max_pages, fails
    alone.

    Ctrl-C (or SIGTERM) stops within moments: documents written so far are kept, whole,
    and a re-run goes on from there. With --watch, Ctrl-C while waiting for changes ends
    the command cleanly (exit 0)."""
    if list_failed or not paths:
        _list_failed(obj, paths, collection, list_failed, as_json)
        return
    with _stoppable() as stop:
        app = obj.writer("ingest")
        keys = parse_key_values(tags, "--tag", empty=True)
        crawl = {"depth": depth, "max_pages": max_pages, "include": include, "exclude": exclude}
        remote, local = _split(paths, app.settings, crawl, watch)
        reports = [
            _reported(functools.partial(_fetched, app, collection, source, keys), stop, as_json)
            for source in remote
        ]
        if not local:
            _exit_for(*reports)
            return
        exclusions = [*app.settings.ingest.exclude, *exclude]

        def run(pruning: bool) -> IngestReport:
            with ingest_progress(app.settings.ingest) as progress:
                return app.collection(collection).ingest(
                    local, keys, include=list(include), exclude=exclusions,
                    prune=pruning, progress=progress,
                )  # fmt: skip

        reports.append(_reported(lambda: run(prune), stop, as_json))
        if not watch:
            _exit_for(*reports)
            return
        _watched(local, app.settings.server.watch_debounce_ms, lambda: run(True), stop, as_json)


def _split(
    specs: tuple[str, ...], settings: Settings, crawl: Mapping[str, object], watch: bool
) -> tuple[list[RemoteSource], list[Path]]:
    """The websites (and other remote sources) among ``specs``, and the paths."""
    from knowhub.ingest.remote import remote_source

    options = {key: value for key, value in crawl.items() if value not in (None, ())}
    found = [(spec, remote_source(spec, settings, options)) for spec in specs]
    remote = [source for _, source in found if source is not None]
    local = [Path(spec) for spec, source in found if source is None]
    if remote and watch:
        raise click.UsageError(
            "--watch follows folders: a website is refreshed by `knowhub sync` "
            "(sources: in knowhub.yaml)"
        )
    if not remote and (crawl["depth"] is not None or crawl["max_pages"] is not None):
        raise click.UsageError("--depth and --max-pages apply to a URL: give one")
    return remote, local


def _fetched(
    app: App, collection: str | None, source: RemoteSource, tags: dict[str, str]
) -> IngestReport:
    """``source`` fetched and ingested, its fetch's progress and counts on stderr."""
    from knowhub.ingest.remote import fetched_text

    echo(f"fetching {source.spec}", err=True)
    with ingest_progress(app.settings.ingest) as progress:
        report = app.collection(collection).ingest_source(
            source, tags, progress, lambda line: echo(line, err=True)
        )
    if report.fetched:  # a website's page counts (a repository's fetch said its own)
        echo(f"{source.spec}: {fetched_text(report.fetched)}", err=True)
    return report


@click.command()
@click.argument("path_or_doc_hash")
@click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)
@click.option(
    "--all-matches", is_flag=True, help="Remove every document a doc-hash prefix matches."
)
@click.pass_obj
def remove(
    obj: CliContext, path_or_doc_hash: str, collection: str | None, all_matches: bool
) -> None:
    """Remove a document (by file path, source or doc-hash prefix) and all its chunks.

    A doc-hash prefix is 8 or more hex digits; one matching several documents removes none
    and lists them, unless --all-matches is given."""
    removed = (
        obj.writer("remove documents")
        .collection(collection)
        .remove(path_or_doc_hash, all_matches=all_matches)
    )
    for record in removed:
        echo(f"removed {record.source} ({record.chunk_count} chunks)")


def _list_failed(
    obj: CliContext, paths: tuple[str, ...], collection: str | None, asked: bool, as_json: bool
) -> None:
    if not asked:
        raise click.UsageError("give the files or folders to ingest (or --failed)")
    if paths:
        raise click.UsageError("--failed lists the failed files: give it no PATHS")
    failed = obj.app().collection(collection).failed_files()
    if as_json:
        emit([dataclasses.asdict(entry) for entry in failed], as_json)
        return
    for entry in failed:
        echo(f"{entry.source} (failed {entry.failed_at}): {entry.reason}")
    retried = "they are read again once they or the settings change"
    echo(f"{len(failed)} failed files; {retried}" if failed else "no failed files", err=True)


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


def _reported(run: Callable[[], IngestReport], stop: _Stop, as_json: bool) -> IngestReport:
    """``run()``'s report, printed; a stop (Ctrl-C, SIGTERM) ends the command, saying what
    was kept."""
    from knowhub.ingest.pipeline import IngestStopped

    try:
        report = run()
    except IngestStopped as stopped:
        report = stopped.report
        emit(report.to_dict() if as_json else render_report(report), as_json)
        echo(f"stopped: {report.stop_summary()}; re-run to continue", err=True)
        sys.exit(128 + stop.signum)
    except KeyboardInterrupt:  # before or after the documents' loop
        echo("stopped; re-run to continue", err=True)
        sys.exit(128 + stop.signum)
    emit(report.to_dict() if as_json else render_report(report), as_json)
    for _, warning in report.warnings:  # indexed, but the user has something to fix
        echo(f"warning: {warning}", err=True)
    return report


def _watched(
    paths: list[Path],
    debounce_ms: int,
    sync: Callable[[], IngestReport],
    stop: _Stop,
    as_json: bool,
) -> None:
    """Re-ingest after each settled burst of changes under ``paths`` until Ctrl-C. In this
    thread, not a watcher's: a stop mid-sync ends the command as a stop mid-ingest does."""
    import watchfiles

    watching = False
    # The first yield (a change, or none within a second) comes once the watcher runs: then
    # one more sync catches what changed since the first ingest read the paths.
    for changes in watchfiles.watch(
        *paths,
        debounce=debounce_ms,
        raise_interrupt=False,
        yield_on_timeout=True,
        rust_timeout=1000,
    ):
        if not watching:
            watching = True
            shown = ", ".join(str(p) for p in paths)
            echo(f"watching {shown} for changes (Ctrl-C to stop)", err=True)
        elif not changes:
            continue
        else:
            echo(f"{len(changes)} change(s): re-indexing", err=True)
        _reported(sync, stop, as_json)
    echo("stopped watching", err=True)


def _exit_for(*reports: IngestReport) -> None:
    if not all(report.ok for report in reports):
        sys.exit(1)
