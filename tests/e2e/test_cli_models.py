"""Models the user brings, from the command line: `knowhub models check` on good and broken
folders, then an ONNX embedder and cross-encoder through ingest, search, eval and versions
(tiny random-weight BERTs from tests/onnx_models.py: nothing is downloaded)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import knowhub, write
from tests.onnx_models import (
    break_opset,
    build_cross_encoder,
    build_encoder,
    drop_tokenizer,
    set_config_dim,
)

TOPICS = {
    "backup": "The database backup runs weekly and is copied to the server.",
    "coffee": "Espresso brewing at home needs fresh coffee and hot water.",
    "invoice": "The invoice payment is due on friday by bank transfer.",
}


def onnx_env(model: Path, reranker: Path | None = None) -> dict[str, str]:
    env = {"KNOWHUB_EMBEDDER__PROVIDER": "onnx", "KNOWHUB_EMBEDDER__ONNX__PATH": str(model)}
    if reranker is not None:
        env |= {
            "KNOWHUB_RERANKER__PROVIDER": "onnx-cross-encoder",
            "KNOWHUB_RERANKER__ONNX_CROSS_ENCODER__PATH": str(reranker),
        }
    return env


def ok_json(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    result = knowhub(*args, "--json", cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_check_reports_a_runnable_embedder_and_cross_encoder(tmp_path: Path) -> None:
    model = build_encoder(tmp_path / "embedder", prompts={"query": "query: "}).folder
    shown = knowhub("models", "check", str(model), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "vectors: 32 dimensions, pooling mean, up to 128 tokens" in shown.stdout
    assert "prompts: query 'query: ', passage ''" in shown.stdout
    assert "embedder ready" in shown.stdout and "provider: onnx\n" in shown.stdout
    assert f"path: {model.resolve()}" in shown.stdout
    cross = build_cross_encoder(tmp_path / "reranker").folder
    report = ok_json("models", "check", str(cross), cwd=tmp_path)
    assert report["ok"] and report["kind"] == "cross-encoder"
    assert report["settings"]["reranker"]["provider"] == "onnx-cross-encoder"
    int8 = ok_json("models", "check", str(cross), "--quantize", "int8", cwd=tmp_path)
    assert "passage pairs in the float graph's order" in " ".join(int8["checks"]), int8
    assert int8["settings"]["reranker"]["onnx_cross_encoder"]["quantize"] == "int8"


def test_check_reports_the_int8_graphs_parity(tmp_path: Path) -> None:
    model = build_encoder(tmp_path / "embedder").folder
    shown = knowhub("models", "check", str(model), "--quantize", "int8", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    parity = re.search(
        r"int8: 12 matrices quantised; cosine with the float graph mean ([0-9.]+)", shown.stdout
    )
    assert parity is not None and float(parity.group(1)) >= 0.999, shown.stdout
    assert "ms a text against" in shown.stdout and "quantize: int8" in shown.stdout


@pytest.mark.parametrize(
    ("breaking", "said"),
    [
        (lambda folder: break_opset(folder, 5), "declares opset 5; ONNX Runtime runs 7"),
        (lambda folder: break_opset(folder, 16), "(opset 16) is not a valid graph"),
        (drop_tokenizer, "has no tokenizer.json: export the model with its tokenizer"),
        (lambda folder: set_config_dim(folder, 48), "configuration says 48 dimensions"),
        (
            lambda folder: (folder / "model.onnx").write_bytes(b"\x08\x07junk"),
            "is not an ONNX model",
        ),
    ],
    ids=["old-opset", "op-newer-than-opset", "no-tokenizer", "dimension", "damaged"],
)
def test_check_names_what_is_wrong_and_the_fix(tmp_path: Path, breaking: Any, said: str) -> None:
    folder = build_encoder(tmp_path / "m").folder
    breaking(folder)
    result = knowhub("models", "check", str(folder), cwd=tmp_path)
    assert result.returncode == 1 and said in result.stderr, result.stderr
    assert "ok     files" in result.stdout or "tokenizer" in said


def test_an_onnx_embedder_and_reranker_serve_ingest_search_and_eval(tmp_path: Path) -> None:
    model = build_encoder(tmp_path / "embedder").folder
    cross = build_cross_encoder(tmp_path / "reranker").folder
    for name, text in TOPICS.items():
        write(tmp_path / "docs" / f"{name}.md", f"# {name.title()}\n\n{text}\n")
    env = onnx_env(model, cross)
    ingested = knowhub("ingest", "docs", "--collection", "kb", cwd=tmp_path, env=env)
    assert ingested.returncode == 0, ingested.stderr
    [view] = ok_json("collections", cwd=tmp_path, env=env)
    assert view["embedder"].startswith("onnx:bert:"), view
    hits = ok_json("search", "weekly database backup", "-c", "kb", cwd=tmp_path, env=env)
    assert Path(hits[0]["source"]).name == "backup.md"
    assert hits[0]["rerank_score"] is not None, "the cross-encoder rescored the hits"
    beir = tmp_path / "tiny"
    corpus = [{"_id": n, "title": n, "text": t} for n, t in TOPICS.items()]
    write(beir / "corpus.jsonl", "\n".join(json.dumps(row) for row in corpus) + "\n")
    write(beir / "queries.jsonl", '{"_id": "q1", "text": "when is the invoice payment due"}\n')
    write(beir / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\tinvoice\t1\n")
    report = ok_json("eval", str(beir), cwd=tmp_path, env=env)
    assert report["context"]["embedder"] == "onnx" and report["metrics"]["hit_rate@10"] == 1.0
    assert report["context"]["reranker"] == "onnx-cross-encoder"
    assert set(report["without_reranker"]["metrics"]) == set(report["metrics"])
    shown = knowhub("eval", str(beir), cwd=tmp_path, env=env)
    assert "without the reranker)" in shown.stdout, shown.stdout
    plain = ok_json("eval", str(beir), cwd=tmp_path, env=onnx_env(model))
    assert "without_reranker" not in plain, "nothing to compare without a reranker"


def test_switching_to_an_onnx_model_builds_a_version_beside_the_active_one(
    tmp_path: Path,
) -> None:
    for name, text in TOPICS.items():
        write(tmp_path / "docs" / f"{name}.md", f"# {name.title()}\n\n{text}\n")
    assert knowhub("ingest", "docs", "--collection", "kb", cwd=tmp_path).returncode == 0
    model = build_encoder(tmp_path / "embedder").folder
    env = onnx_env(model)
    built = ok_json(
        "versions", "build", "--collection", "kb", "--embedder", "onnx", cwd=tmp_path, env=env
    )
    assert built["version"]["embedder_id"].startswith("onnx:bert:") and not built["activated"]
    rows = ok_json("versions", "list", "--collection", "kb", cwd=tmp_path)
    assert [(r["number"], r["embedder_id"][:5], r["active"]) for r in rows] == [
        (1, "hashi", True),
        (2, "onnx:", False),
    ]
    activated = knowhub("versions", "activate", "--collection", "kb", "2", cwd=tmp_path)
    assert activated.returncode == 0, activated.stderr
    hits = ok_json("search", "espresso coffee", "-c", "kb", cwd=tmp_path)
    assert Path(hits[0]["source"]).name == "coffee.md", "version 2 answers with its own model"
    model.rename(tmp_path / "moved")
    lost = knowhub("search", "espresso coffee", "-c", "kb", cwd=tmp_path)
    assert lost.returncode == 1 and "not found" in lost.stderr, lost.stderr
    moved = ok_json(
        "search", "espresso", "-c", "kb", cwd=tmp_path, env=onnx_env(tmp_path / "moved")
    )
    assert Path(moved[0]["source"]).name == "coffee.md", "the configured path finds the model"
    int8 = onnx_env(tmp_path / "moved") | {"KNOWHUB_EMBEDDER__ONNX__QUANTIZE": "int8"}
    third = ok_json(
        "versions", "build", "--collection", "kb", "--embedder", "onnx", cwd=tmp_path, env=int8
    )
    assert third["version"]["number"] == 3, "int8 vectors are another version"
    assert third["version"]["embedder_id"] != rows[1]["embedder_id"]
    assert knowhub("versions", "activate", "--collection", "kb", "3", cwd=tmp_path).returncode == 0
    quantised = ok_json("search", "espresso coffee", "-c", "kb", cwd=tmp_path, env=int8)
    assert Path(quantised[0]["source"]).name == "coffee.md"
    other = build_encoder(tmp_path / "other", seed=5).folder
    wrong = knowhub("search", "espresso", "-c", "kb", cwd=tmp_path, env=onnx_env(other))
    assert wrong.returncode == 1 and "was built with embedder onnx:bert:" in wrong.stderr
