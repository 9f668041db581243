"""The fusion's dense weight chosen for a collection version on judged questions
(`knowhub calibrate --golden`): each weight ranked as `knowhub eval` ranks, the choice
stored with the version, used by its searches unless the configuration sets one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.app import App, build_app
from knowhub.eval.fusion import sweep
from knowhub.eval.golden import golden_set
from knowhub.eval.runner import run_queries
from knowhub.query import tuning
from tests.helpers import fast_settings, knowhub, write
from tests.onnx_models import build_encoder

SUBJECTS = [
    ("backup", "The database backup is copied to the server every night."),
    ("coffee", "Espresso needs finely ground coffee and water at ninety degrees."),
    ("invoice", "An invoice is paid by bank transfer within thirty days."),
    ("parking", "Visitors park at the gate, staff in the north garage."),
    ("password", "A forgotten password is reset from the sign-in page."),
    ("holiday", "The office closes between Christmas and the new year."),
    ("printer", "A paper jam is cleared from the rear tray of the printer."),
    ("travel", "Train tickets and hotel nights are refunded with receipts."),
    ("alarm", "When the fire alarm rings, leave by the stairs."),
    ("wifi", "Guests join the visitor wifi with the code from reception."),
    ("laptop", "New hires get a laptop and a badge in their first week."),
    ("review", "Every code change needs one approval before the merge."),
]
QUESTIONS = [
    ("backup", "when is the database backup copied"),
    ("coffee", "water temperature for espresso"),
    ("invoice", "how is an invoice paid"),
    ("parking", "where do visitors park"),
    ("password", "reset a forgotten password"),
    ("holiday", "is the office closed at Christmas"),
    ("printer", "clear a paper jam"),
    ("travel", "are hotel nights refunded"),
    ("alarm", "what to do when the fire alarm rings"),
    ("wifi", "wifi code for guests"),
    ("laptop", "what do new hires get"),
]


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[tuple[App, Path]]:
    for name, text in SUBJECTS:
        write(tmp_path / "docs" / f"{name}.md", f"# {name.title()}\n\n{text}\n")
    golden = [{"query": q, "expected_sources": [f"{name}.md"]} for name, q in QUESTIONS]
    write(tmp_path / "golden.json", json.dumps(golden))
    app = build_app(fast_settings(tmp_path / "data"))
    app.collection("kb").ingest([tmp_path / "docs"])
    yield app, tmp_path / "golden.json"
    app.close()


def test_each_weight_is_ranked_as_eval_ranks_it(kb: tuple[App, Path], tmp_path: Path) -> None:
    app, golden = kb
    handle = app.collection("kb")
    queries = golden_set(golden, "kb").queries
    where = (handle.target.physical, handle.caller.scope)
    scores = sweep(app.store, handle.embedder, app.settings.search, where, queries)
    assert list(scores) == list(tuning.WEIGHTS)
    for weight in (0.0, 0.5, 1.0):
        fixed = build_app(fast_settings(tmp_path / "data", **{"search.dense_weight": weight}))
        evalset = golden_set(golden, "kb")
        result = run_queries(fixed.collection("kb"), evalset, "kb", top_k=100)
        fixed.close()
        assert scores[weight] == pytest.approx(result.metrics["ndcg@10"], abs=1e-9), weight


def test_the_weight_chosen_serves_the_versions_searches_unless_one_is_set(
    kb: tuple[App, Path], tmp_path: Path
) -> None:
    app, _ = kb
    handle = app.collection("kb")
    before = handle.search("espresso water", top_k=5)
    assert handle.debug_search("espresso water")["fusion"]["weights"]["dense"] == 0.5
    found = tuning.Tuned(handle.embedder.model_id, 11, 0.5, 0.0, {"0.0": 1.0}, "golden.json")
    tuning.save(app.store, handle.store_id(), found)
    again = app.collection("kb")
    assert again.search_settings.dense_weight == 0.0
    assert "dense" not in again.debug_search("espresso water")["fusion"]["weights"]
    lexical = again.search("espresso water", top_k=5)
    assert lexical.cache.get("result") != "hit", "a weight of its own is another result"
    assert [h.score for h in lexical.hits] != [h.score for h in before.hits]
    chosen = build_app(fast_settings(tmp_path / "data", **{"search.dense_weight": 0.5}))
    assert chosen.collection("kb").search_settings.dense_weight == 0.5, "the configured wins"
    chosen.close()
    other = tuning.Tuned("another-model", 11, 0.5, 0.0)
    tuning.save(app.store, handle.store_id(), other)
    assert app.collection("kb").search_settings.dense_weight == 0.5, "measured with another"


def test_calibrate_golden_prints_the_weights_and_keeps_one(kb: tuple[App, Path]) -> None:
    app, golden = kb
    cwd = golden.parent
    env = {"KNOWHUB_DATA_DIR": str(cwd / "data"), "KNOWHUB_EMBEDDER__PROVIDER": "hashing"}
    app.close()
    shown = knowhub("calibrate", "-c", "kb", "--golden", str(golden), cwd=cwd, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "fusion on 11 questions of golden.json, nDCG@10 by dense weight:" in shown.stdout
    assert "  0.0: " in shown.stdout and "  1.0: " in shown.stdout
    done = knowhub("calibrate", "-c", "kb", "--golden", str(golden), "--json", cwd=cwd, env=env)
    report = json.loads(done.stdout)["fusion"]
    assert report["questions"] == 11 and len(report["scores"]) == 11
    best = max(report["scores"].values())
    assert report["scores"][f"{report['dense_weight']:.1f}"] >= best - tuning.MARGIN
    write(cwd / "few.json", json.dumps(json.loads(golden.read_text())[:4]))
    few = knowhub("calibrate", "-c", "kb", "--golden", str(cwd / "few.json"), cwd=cwd, env=env)
    assert few.returncode == 1 and "needs at least 10" in few.stderr, few.stderr
    rrf = env | {"KNOWHUB_SEARCH__FUSION": "rrf"}
    refused = knowhub("calibrate", "-c", "kb", "--golden", str(golden), cwd=cwd, env=rrf)
    assert refused.returncode == 1 and "set search.fusion: weighted" in refused.stderr
    other = env | {"KNOWHUB_EMBEDDER__HASHING__DIM": "128"}
    before = json.loads(done.stdout)["fusion"]
    wrong = knowhub("calibrate", "-c", "kb", "--golden", str(golden), cwd=cwd, env=other)
    assert wrong.returncode == 1 and "was built with embedder" in wrong.stderr, wrong.stderr
    again = build_app(fast_settings(cwd / "data"))
    try:
        kept = tuning.stored(again.store, again.collection("kb").store_id(), "hashing-256")
        assert kept is not None and kept.scores == before["scores"], "nothing stored by a failure"
    finally:
        again.close()


def test_a_dense_weight_of_one_leaves_words_to_languages_the_model_does_not_know(
    tmp_path: Path,
) -> None:
    model = build_encoder(tmp_path / "model").folder
    text = "Резервная копия базы данных создаётся каждую ночь и хранится месяц."
    write(tmp_path / "docs" / "ru.md", f"# Резервное копирование\n\n{text}\n")
    write(tmp_path / "docs" / "en.md", "# Coffee\n\nEspresso needs finely ground coffee.\n")
    options = {
        "embedder.provider": "onnx",
        "embedder.onnx.path": str(model),
        "embedder.onnx.languages": ["en"],
        "search.dense_weight": 1.0,  # as `calibrate --golden` may choose on English questions
    }
    app = build_app(fast_settings(tmp_path / "data", **options))
    try:
        handle = app.collection("kb")
        handle.ingest([tmp_path / "docs"])
        hits = handle.search("когда создаётся резервная копия базы данных").hits
        assert hits and hits[0].source == "ru.md", "the words' leg answers alone"
        english = handle.debug_search("espresso coffee")["fusion"]["weights"]
        assert english == {"dense": 1.0}, english
    finally:
        app.close()


def test_an_unreadable_record_is_left_unused(kb: tuple[App, Path]) -> None:
    app, _ = kb
    handle = app.collection("kb")
    key = f"fusion:{handle.store_id()}"
    model_id = handle.embedder.model_id
    text_weight = json.dumps({"embedder": model_id, "dense_weight": "0.3"})
    for raw in ("{not json", text_weight, "[]"):
        app.store.set_meta(key, raw, app.store.get_meta(key))
        assert tuning.stored(app.store, handle.store_id(), model_id) is None, raw
        assert app.collection("kb").search("espresso").hits, raw
    newer = {"embedder": model_id, "questions": 12, "configured": 0.5, "dense_weight": 0.3}
    app.store.set_meta(key, json.dumps({**newer, "added_later": 1}), app.store.get_meta(key))
    assert app.collection("kb").search_settings.dense_weight == 0.3, "unknown fields skipped"
