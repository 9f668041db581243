"""``knowhub verify``, ``knowhub export`` and ``knowhub import``: check, move and restore
an index (see ``knowhub.ingest.verify`` and ``knowhub.ingest.bundle``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from knowhub.interfaces.cli.context import CliContext, emit

if TYPE_CHECKING:  # loaded by the commands (cold start of every other command)
    from knowhub.ingest.bundle import BundleStats

__all__ = ["export_command", "import_command", "verify"]


@click.command()
@click.option("--collection", "-c", help="Collection to check (default: every collection).")
@click.option("--fix", is_flag=True, help="Repair what is wrong, then check again.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def verify(obj: CliContext, collection: str | None, fix: bool, as_json: bool) -> None:
    """Prove the index matches its files: each file unchanged, each chunk in both search
    legs, no orphan rows, the configured embedder. Exit status 1 on any problem."""
    from knowhub.ingest.verify import render_verify

    report = (obj.writer("repair the index") if fix else obj.app()).verify(collection, fix=fix)
    emit(report.to_dict() if as_json else render_verify(report), as_json)
    if not report.ok:
        sys.exit(1)


@click.command("export")
@click.argument("out", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--collection",
    "-c",
    help="Collection to export (default: the configured one; unset, the only one there is).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@click.pass_obj
def export_command(obj: CliContext, out: Path, collection: str | None, as_json: bool) -> None:
    """Write a collection to OUT (.jsonl, or .jsonl.gz for gzip): documents, chunks,
    vectors, lexical tokens and FAQ entries, for `knowhub import` elsewhere."""
    stats = obj.app().collection(collection).export(out)
    emit(stats.to_dict() if as_json else _summary("exported", stats), as_json)


@click.command("import")
@click.argument("bundle", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--collection", "-c", help="Collection to import into (default: the bundle's).")
@click.option("--json", "as_json", is_flag=True, help="Print what was loaded as JSON.")
@click.pass_obj
def import_command(obj: CliContext, bundle: Path, collection: str | None, as_json: bool) -> None:
    """Load a bundle written by `knowhub export` (the configured embedder must be the
    bundle's). Each document replaces its old version atomically; a rerun changes nothing."""
    from knowhub.ingest.bundle import bundle_collection  # loads ingest: not at start

    writer = obj.writer("import a bundle")
    stats = writer.collection(collection or bundle_collection(bundle)).import_bundle(bundle)
    emit(stats.to_dict() if as_json else _summary("imported", stats), as_json)


def _summary(verb: str, stats: BundleStats) -> str:
    return (
        f"{verb} {stats.documents} documents, {stats.chunks} chunks, {stats.faq} FAQ entries "
        f"of collection {stats.collection!r} ({stats.embedder}, dim {stats.dim}) "
        f"{'to' if verb == 'exported' else 'from'} {stats.path}"
    )
