"""The synthetic corpus of ``benchmarks/scale.py``: texts, vectors, queries and exact answers.

Chunk ``i`` is ~592 characters of scifact sentences drawn by a seeded generator, its team is
``t{(i // DOC_CHUNKS) % 10}`` (so ``team=t3`` matches a tenth of the chunks, whole documents
of ``DOC_CHUNKS``), its vector the hashing embedder's (dim 384) and its lexical terms
knowhub's ``index_tokens``. Everything is written once under the cache folder as flat files
read back in batches, so a million chunks (1.5 GB of vectors) never sit in memory at once.
The draw is sequential, so a larger corpus starts with every smaller one: a cached corpus of
at least N chunks serves N.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from knowhub.lang import index_tokens
from knowhub.providers.embedders.hashing import HashingEmbedder

DIM = 384
CHUNK_CHARS = 592
DOC_CHUNKS = 50  # chunks per document: knowhub writes them as one document
TEAMS = 10
FILTER_TEAM = "t3"
DEPTH = 50  # exact neighbours kept per query: the dense leg's candidates (search.candidates)
_BATCH = 10_000  # chunks drawn, embedded and written at a time (fixed: it shapes the draw)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")

F32 = NDArray[np.float32]
I64 = NDArray[np.int64]


def log(message: str) -> None:
    print(f"[bench-scale] {message}", file=sys.stderr, flush=True)


def team_of(i: int) -> str:
    return f"t{(i // DOC_CHUNKS) % TEAMS}"


def in_filter(ids: I64) -> NDArray[np.bool_]:
    """Whether each chunk index has ``team == FILTER_TEAM``."""
    return np.asarray((ids // DOC_CHUNKS) % TEAMS == int(FILTER_TEAM[1:]))


@dataclass(frozen=True)
class Corpus:
    """A cached corpus folder, read as its first ``n`` chunks."""

    folder: Path
    n: int

    def batches(self, size: int) -> Iterator[tuple[int, list[str], list[str], F32]]:
        """``(first index, texts, token strings, vectors)`` for consecutive chunks."""
        with (
            (self.folder / "texts.txt").open(encoding="utf-8") as texts,
            (self.folder / "tokens.txt").open(encoding="utf-8") as tokens,
            (self.folder / "vectors.f32").open("rb") as vectors,
        ):
            for start in range(0, self.n, size):
                count = min(size, self.n - start)
                raw = vectors.read(count * DIM * 4)
                block = np.frombuffer(raw, dtype=np.float32).reshape(count, DIM)
                yield (
                    start,
                    [texts.readline().rstrip("\n") for _ in range(count)],
                    [tokens.readline().rstrip("\n") for _ in range(count)],
                    block,
                )

    def vectors(self) -> F32:
        """All vectors, memory-mapped (the parent's exact search and recall)."""
        mapped = np.memmap(self.folder / "vectors.f32", dtype=np.float32, mode="r")
        return mapped.reshape(-1, DIM)[: self.n]


def sentences(dataset: Path) -> list[str]:
    """The sentences of a BEIR corpus's titles and texts, in file order."""
    out: list[str] = []
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            text = f"{doc.get('title', '')}. {doc.get('text', '')}".replace("\n", " ")
            out.extend(s.strip() for s in _SENTENCE.split(text) if len(s.strip()) > 20)
    return out


def ensure_corpus(cache: Path, dataset: Path, n: int, seed: int) -> Corpus:
    """The cached corpus of ``n`` chunks, generating (and caching) it when none is big enough."""
    for folder in sorted(cache.glob(f"corpus-s{seed}-*"), key=lambda p: int(p.name.split("-")[-1])):
        if int(folder.name.split("-")[-1]) >= n and (folder / "done").exists():
            return Corpus(folder, n)
    folder = cache / f"corpus-s{seed}-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    pool = sentences(dataset)
    embedder = HashingEmbedder(DIM)
    rng = np.random.default_rng(seed)
    log(f"generating {n:,} chunks from {len(pool):,} sentences into {folder}")
    with (
        (folder / "texts.txt").open("w", encoding="utf-8") as texts,
        (folder / "tokens.txt").open("w", encoding="utf-8") as tokens,
        (folder / "vectors.f32").open("wb") as vectors,
    ):
        for start in range(0, n, _BATCH):
            batch = [_chunk(pool, rng) for _ in range(min(_BATCH, n - start))]
            texts.writelines(t + "\n" for t in batch)
            tokens.writelines(" ".join(index_tokens(t)) + "\n" for t in batch)
            vectors.write(embedder.embed_documents(batch).astype(np.float32).tobytes())
            log(f"  corpus {start + len(batch):,}/{n:,}")
    (folder / "done").touch()
    return Corpus(folder, n)


def _chunk(pool: Sequence[str], rng: np.random.Generator) -> str:
    """Sentences drawn at random until ``CHUNK_CHARS``, cut at the last word that fits."""
    text = ""
    while len(text) < CHUNK_CHARS:
        text = f"{text} {pool[int(rng.integers(len(pool)))]}".strip()
    cut = text.rfind(" ", 0, CHUNK_CHARS + 1)
    return text[: cut if cut > 0 else CHUNK_CHARS]


def load_queries(dataset: Path, count: int) -> list[str]:
    """The texts of the first ``count`` test-split queries (qrels/test.tsv), in file order."""
    judged: set[str] = set()
    with (dataset / "qrels" / "test.tsv").open(encoding="utf-8") as qrels:
        for line in qrels:
            judged.add(line.split("\t")[0])
    found: list[str] = []
    with (dataset / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            query = json.loads(line)
            if str(query["_id"]) in judged and query["text"].strip():
                found.append(str(query["text"]))
    return found[:count]


def query_vectors(queries: Sequence[str]) -> F32:
    embedder = HashingEmbedder(DIM)
    return np.stack([embedder.embed_query(q) for q in queries]).astype(np.float32)


@dataclass(frozen=True)
class Truth:
    """Exact top-``DEPTH`` per query (indices, cosines), unfiltered and with the filter."""

    ids: I64
    scores: F32
    filtered_ids: I64
    filtered_scores: F32

    def of(self, filtered: bool) -> tuple[I64, F32]:
        return (self.filtered_ids, self.filtered_scores) if filtered else (self.ids, self.scores)


def exact_truth(corpus: Corpus, queries: F32, cache: Path) -> Truth:
    """Brute-force neighbours over the corpus, in blocks (cached beside the corpus)."""
    path = cache / f"truth-{corpus.folder.name}-{corpus.n}-{_digest(queries)}.npz"
    if path.exists():
        with np.load(path) as saved:
            return Truth(saved["ids"], saved["scores"], saved["fids"], saved["fscores"])
    log(f"exact neighbours of {len(queries)} queries over {corpus.n:,} chunks")
    best = [_empty(len(queries)), _empty(len(queries))]
    vectors = corpus.vectors()
    for start in range(0, corpus.n, 100_000):
        block = np.asarray(vectors[start : start + 100_000])
        ids = np.arange(start, start + len(block), dtype=np.int64)
        scores = queries @ block.T
        best[0] = _merge(best[0], ids, scores)
        keep = in_filter(ids)
        best[1] = _merge(best[1], ids[keep], scores[:, keep])
    truth = Truth(best[0][0], best[0][1], best[1][0], best[1][1])
    np.savez(
        path,
        ids=truth.ids,
        scores=truth.scores,
        fids=truth.filtered_ids,
        fscores=truth.filtered_scores,
    )
    return truth


def _digest(queries: F32) -> str:
    import hashlib  # only here: the cache key of a truth file

    return hashlib.blake2b(queries.tobytes(), digest_size=6).hexdigest()


def _empty(rows: int) -> tuple[I64, F32]:
    return np.zeros((rows, 0), dtype=np.int64), np.zeros((rows, 0), dtype=np.float32)


def _merge(best: tuple[I64, F32], ids: I64, scores: F32) -> tuple[I64, F32]:
    """The top ``DEPTH`` of the running best and a new block, best first."""
    all_ids = np.concatenate([best[0], np.broadcast_to(ids, scores.shape)], axis=1)
    all_scores = np.concatenate([best[1], scores], axis=1)
    order = np.argsort(-all_scores, axis=1, kind="stable")[:, :DEPTH]
    return np.take_along_axis(all_ids, order, 1), np.take_along_axis(all_scores, order, 1)


def recall_at_10(
    returned: Sequence[Sequence[int]], queries: F32, vectors: F32, truth: Truth, filtered: bool
) -> float:
    """Mean recall@10 of dense results against exact search, ties counted as found: a
    returned chunk counts when it passes the filter and its cosine is at least the exact
    10th best (any of several chunks tied at the cut is a right answer)."""
    _, scores = truth.of(filtered)
    found = []
    for row, ids in enumerate(returned):
        top = np.asarray(list(dict.fromkeys(ids))[:10], dtype=np.int64)
        if len(top) == 0 or scores.shape[1] == 0:
            found.append(0.0 if scores.shape[1] else 1.0)
            continue
        kth = scores[row, min(9, scores.shape[1] - 1)]
        mine = np.asarray(vectors[np.sort(top)]) @ queries[row]
        ok = (mine >= kth - 1e-5) & (in_filter(np.sort(top)) if filtered else True)
        found.append(min(int(ok.sum()), 10) / min(10, scores.shape[1]))
    return float(np.mean(found)) if found else 0.0


def overlap_at_10(returned: Sequence[Sequence[int]], reference: Sequence[Sequence[int]]) -> float:
    """Mean share of each reference top-10 found in the returned top-10 (hybrid modes)."""
    shares = [
        len(set(r[:10]) & set(e[:10])) / max(1, len(e[:10]))
        for r, e in zip(returned, reference, strict=True)
    ]
    return float(np.mean(shares)) if shares else 0.0


def percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = np.asarray(values, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(ordered, 50)), 3),
        "p95": round(float(np.percentile(ordered, 95)), 3),
    }


def timed(
    call: Callable[[int], Any], count: int, ids_of: Callable[[Any], list[int]] = list
) -> dict[str, Any]:
    """``call(q)`` for every query index after one warm-up call: CPU ms (this process, all
    threads), wall ms, and the corpus indices ``ids_of`` reads from each answer (untimed)."""
    call(0)
    cpu_ms, wall_ms, ids = [], [], []
    for q in range(count):
        cpu, wall = time.process_time(), time.perf_counter()
        found = call(q)
        cpu_ms.append((time.process_time() - cpu) * 1000)
        wall_ms.append((time.perf_counter() - wall) * 1000)
        ids.append([int(i) for i in ids_of(found)])
    return {"cpu_ms": cpu_ms, "wall_ms": wall_ms, "ids": ids}


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
