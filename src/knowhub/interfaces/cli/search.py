"""``knowhub search``: hybrid search with citations."""

from __future__ import annotations

import click

from knowhub.interfaces.arguments import parse_key_values
from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.render import explain_hits, render_hits, render_search_trace

__all__ = ["search"]


@click.command()
@click.argument("query")
@click.option("-k", "--top-k", type=int, help="Number of hits (1-100, default 5).")
@click.option(
    "--collection",
    "-c",
    help="Collection to search (default: the configured one; unset, the only one there is).",
)
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE", help="Metadata filter.")
@click.option("--min-score", type=float, help="Drop hits whose relevance (0-1) is below this.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of hits.")
@click.option(
    "--explain", is_flag=True, help="Show each hit's lexical, dense, fused and rerank ranks."
)
@click.pass_obj
def search(
    obj: CliContext,
    query: str,
    top_k: int | None,
    collection: str | None,
    filters: tuple[str, ...],
    min_score: float | None,
    as_json: bool,
    explain: bool,
) -> None:
    """Hybrid (dense + BM25) search with citations."""
    result = (
        obj.app()
        .collection(collection)
        .search(query, top_k, parse_key_values(filters, "--filter"), min_score)
    )
    why = explain_hits(result) if explain else None
    if as_json:
        hits = [h.to_dict() for h in result.hits]
        for hit, reasons in zip(hits, why or [], strict=False):
            hit["explain"] = reasons
        emit(hits, True)
    else:
        trace = f"\n\n{render_search_trace(result)}" if explain else ""
        emit(render_hits(result.hits, why) + trace, False)
