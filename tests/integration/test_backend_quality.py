"""Every store backend keeps the SQLite backend's retrieval quality (within 0.01 nDCG@10).

`knowhub eval scifact` runs on each backend as a user runs it (the store chosen by one
environment variable), over the same seeded subset of documents and queries. The hashing
embedder keeps it fast: what differs between the runs is the store alone — its vector
search, its lexical leg, its filters and its fusion inputs. The full data set with the
default model, per backend, is measured in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import cli_env
from tests.integration.test_datasets import DATASETS
from tests.pg_server import PgServer

SUBSET = ("--subset-docs", "1500", "--limit", "300")
PG_URL_ENV = "KNOWHUB_TEST_PG_URL"


def _ndcg(tmp_path: Path, backend: str, env: dict[str, str]) -> float:
    data = tmp_path / backend
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "knowhub",
            "--data-dir",
            str(data),
            "eval",
            str(DATASETS / "scifact"),
            *SUBSET,
            "--json",
        ],
        cwd=tmp_path,
        env=cli_env({"KNOWHUB_STORE__PROVIDER": backend, **env}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"{backend}: {result.stderr[-3000:]}"
    summary = json.loads(result.stdout)
    assert (summary["queries"], summary["documents"]) == (300, 1500)
    return float(summary["metrics"]["ndcg@10"])


@pytest.mark.datasets
def test_every_backend_is_within_0_01_ndcg_of_sqlite_on_scifact(
    tmp_path: Path, pg_server: PgServer
) -> None:
    if not (DATASETS / "scifact").is_dir():
        pytest.skip(f"data set {DATASETS / 'scifact'} not present (set KNOWHUB_DATASETS)")
    backends = {
        "sqlite": {},
        "postgres": {
            "KNOWHUB_STORE__POSTGRES__URL_ENV": PG_URL_ENV,
            PG_URL_ENV: pg_server.create_database(),
        },
        "milvus": {},
        "chroma": {},
    }
    # Side by side: each run waits on its store's server or I/O much of the time.
    with ThreadPoolExecutor(len(backends)) as pool:
        runs = {b: pool.submit(_ndcg, tmp_path, b, env) for b, env in backends.items()}
        scores = {backend: run.result() for backend, run in runs.items()}
    print("scifact subset nDCG@10: " + ", ".join(f"{b} {s:.4f}" for b, s in scores.items()))
    baseline = scores.pop("sqlite")
    assert baseline > 0.3, f"sqlite nDCG@10 {baseline:.4f}: the subset run itself is broken"
    for backend, score in scores.items():
        assert abs(score - baseline) <= 0.01, f"{backend} {score:.4f} vs sqlite {baseline:.4f}"
