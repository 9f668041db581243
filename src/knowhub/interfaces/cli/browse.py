"""``knowhub collections``, ``knowhub docs`` and ``knowhub show``: what the index holds."""

from __future__ import annotations

import click

from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.render import render_chunk, render_collections, render_documents

__all__ = ["collections", "docs", "show"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def collections(obj: CliContext, as_json: bool) -> None:
    """List collections with their document and chunk counts."""
    infos = obj.app().collections()
    emit([vars(i) for i in infos] if as_json else render_collections(infos), as_json)


@click.command()
@click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def docs(obj: CliContext, collection: str | None, as_json: bool) -> None:
    """List the documents of a collection."""
    records = obj.app().collection(collection).documents()
    emit([vars(r) for r in records] if as_json else render_documents(records), as_json)


@click.command()
@click.argument("chunk_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def show(obj: CliContext, chunk_id: str, as_json: bool) -> None:
    """Show one chunk in full, with its citation."""
    hits = obj.app().chunk(chunk_id)
    emit([h.to_dict() for h in hits] if as_json else render_chunk(hits), as_json)
