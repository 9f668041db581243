"""``knowhub sync``: bring the websites and repositories of ``sources:`` up to date."""

from __future__ import annotations

import sys

import click

from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.render import render_report
from knowhub.interfaces.terminal import echo

__all__ = ["sync"]


@click.command()
@click.argument("names", nargs=-1)
@click.option("--collection", "-c", help="Only the sources of this collection.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.pass_obj
def sync(obj: CliContext, names: tuple[str, ...], collection: str | None, as_json: bool) -> None:
    """Refresh the sources: of knowhub.yaml now (all, or those NAMES, or those of one
    collection), each only for what changed since its last refresh: a page the server
    answers 304 is not read again, one gone (404/410) leaves the collection.

    A report per source; the exit status is 1 when any failed. The servers (serve mcp,
    serve http) refresh each source on its own refresh: interval."""
    from knowhub.ingest.remote import fetched_text
    from knowhub.interfaces.sources import selected_sources, sync_source

    app = obj.writer("sync sources")
    entries = selected_sources(app.settings, names, collection)
    if not entries:
        echo("no sources to sync: add sources: to knowhub.yaml (docs/sources.md)", err=True)
        return
    runs = []
    for entry in entries:
        echo(f"syncing {entry.name}", err=True)
        run = sync_source(app, entry, lambda line: echo(line, err=True))
        runs.append(run)
        if as_json:
            continue
        if run.report is None:
            echo(f"{entry.name}: failed: {run.error}")
        else:
            echo(f"{entry.name}: {fetched_text(run.report.fetched)}")
            echo(render_report(run.report))
    if as_json:
        emit(
            [
                {"name": r.entry.name, "spec": r.entry.shown, "error": r.error or None}
                | ({"report": r.report.to_dict()} if r.report else {})
                for r in runs
            ],
            as_json,
        )
    if not all(run.ok for run in runs):
        sys.exit(1)
