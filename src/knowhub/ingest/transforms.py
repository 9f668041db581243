"""LLM transforms of chunks (``ingest.transforms``, off by default): refinement and enrichment.

*Refinement* asks the configured LLM to clean a chunk's OCR noise and broken hyphenation.
Where the cleaned text goes is the design's one choice: a chunk's ``text`` is always the exact
span ``doc.text[char_start:char_end]`` (citations, the console's highlighting and line
numbers rely on it), so the refined text cannot replace it. It is kept beside it, in the
chunk's metadata (``llm.refined``), and it is what is embedded and lexically indexed in the
chunk's place (:func:`searchable_text`): a query then meets the words the scan meant, while
the hit still shows and cites what the page says. Results carry it in their metadata.

*Enrichment* asks, as one JSON-mode call per chunk, for a title, a one- or two-sentence
summary, keywords and one question the chunk answers. They are searchable (added to what is
embedded and indexed), shown with each hit (CLI, MCP, HTTP), and the keywords are filterable:
they are the chunk's ``keywords`` metadata, a list, which every store's filter matches on any
of its elements (``filters: {keywords: invoice}``). The whole answer is kept as the mapping
``llm`` (with ``refined``), which no filter reads: matching a whole sentence exactly is of no
use, and a mapping keeps such long values out of the stores' filter terms.

Every answer is cached by the chunk's text, the model and :data:`PROMPT_VERSION`
(:mod:`knowhub.ingest.transform_cache`), so a re-ingest asks nothing. A malformed answer or a
failing provider leaves that chunk as it was, never the file: the file gets one warning
naming how many chunks went without, and why. Answers that failed are not cached.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from knowhub.config import Settings
from knowhub.config.ingest import TransformSettings
from knowhub.errors import ConfigError, KnowhubError
from knowhub.ingest.progress import ProgressTracker
from knowhub.ingest.transform_cache import TransformCache, transform_key
from knowhub.models import Chunk
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = [
    "CACHE_FILE",
    "PROMPT_VERSION",
    "LlmTransforms",
    "build_transforms",
    "own_metadata",
    "parse_enrichment",
    "searchable_text",
    "transforms_wanted",
]

PROMPT_VERSION = 1  # bump when a prompt changes: cached answers to the old one are not reused
CACHE_FILE = "llm-transforms.sqlite"

REFINE_PROMPT = (
    "You clean text that was extracted from a document by OCR or from a PDF. Fix misread "
    "characters, words split by a hyphen at a line end, and broken spacing. Do not add, drop, "
    "reword, translate or summarise anything. Answer with the cleaned text only."
)
ENRICH_PROMPT = (
    "You describe one passage of a document for a search index. Answer with a JSON object "
    'with exactly these keys: "title" (a short title for the passage), "summary" (one or two '
    'sentences), "keywords" (a list of 3 to 8 key terms found in the passage), "question" '
    "(one question the passage answers). Write them in the passage's language."
)
# Bounds on what is kept of an answer: an index entry, not an essay.
_LIMITS = {"title": 200, "summary": 1000, "question": 300}
_MAX_KEYWORDS, _KEYWORD_CHARS = 12, 60
# A refined text this much shorter or longer than the chunk is a rewrite, not a cleanup.
_REFINED_RATIO = (0.5, 1.5)


def transforms_wanted(settings: Settings) -> bool:
    """Whether ingest needs the LLM (so that no model is built when it does not)."""
    options = settings.ingest.transforms
    return options.refine or options.enrich


def build_transforms(settings: Settings, llm: LLM | None) -> LlmTransforms | None:
    """The transforms ``settings`` turn on (None: none), or a ConfigError naming the
    setting when one is on with ``llm.provider: none``."""
    options = settings.ingest.transforms
    on = [name for name in ("refine", "enrich") if getattr(options, name)]
    if not on:
        return None
    if llm is None:
        setting = f"ingest.transforms.{on[0]}"
        raise ConfigError(
            f"{setting} is on, but llm.provider is {settings.llm.provider!r}: configure an LLM "
            f"(llm.provider openai, azure or ollama, with llm.model) or set {setting}: false"
        )
    cache = TransformCache(Path(settings.data_dir) / CACHE_FILE, options.cache_entries)
    return LlmTransforms(llm, options, cache)


def searchable_text(chunk: Chunk) -> str:
    """What stands for a chunk's text in its embedding and lexical index: the refined text
    when there is one, and the enrichment's fields after it."""
    found = chunk.metadata.get("llm")
    llm = found if isinstance(found, dict) else {}
    text = str(llm.get("refined") or chunk.text)
    extra = [str(llm[key]) for key in ("title", "summary", "question") if llm.get(key)]
    if llm.get("keywords"):
        extra.append(", ".join(map(str, llm["keywords"])))
    return "\n".join([text, *extra])


def own_metadata(chunks: list[Chunk], doc_id: str) -> dict[str, Any]:
    """A document record's ``knowhub`` metadata: its id, and ``chunk_keys``, the filterable
    metadata its chunks carry beyond the document's (``keywords`` of enriched chunks), which
    the record's other metadata cannot tell search about."""
    own: dict[str, Any] = {"doc_id": doc_id}
    if any("keywords" in chunk.metadata.get("llm", ()) for chunk in chunks):
        own["chunk_keys"] = ["keywords"]
    return own


# Provider failures in a row after which a run stops asking (the server is down): each would
# otherwise wait out its timeout and retries, chunk after chunk.
_GIVE_UP_AFTER = 3


class LlmTransforms:
    """Refines and enriches chunks with ``llm``, remembering answers in ``cache``."""

    def __init__(self, llm: LLM, options: TransformSettings, cache: TransformCache) -> None:
        self.llm = llm
        self.options = options
        self.cache = cache
        self.calls = 0  # LLM calls made (cache misses)
        self.failures = 0  # provider failures in a row: past _GIVE_UP_AFTER, none is asked

    def apply(
        self, chunks: list[Chunk], source: str, tracker: ProgressTracker
    ) -> tuple[list[Chunk], str | None]:
        """``chunks`` transformed, and a warning when some could not be."""
        problems: list[str] = []
        done: list[Chunk] = []
        for number, chunk in enumerate(chunks, start=1):
            calls = self.calls
            done.append(self._transform(chunk, problems))
            if self.calls != calls:  # a cached chunk costs nothing worth telling
                tracker.transformed(source, number, len(chunks))
        if not problems:
            return done, None
        return done, (
            f"{source}: {len(problems)} of {len(chunks)} chunks not transformed by the LLM "
            f"(kept as they are; the next ingest of the file tries again): {problems[0]}"
        )

    def close(self) -> None:
        self.cache.close()

    def _transform(self, chunk: Chunk, problems: list[str]) -> Chunk:
        llm: dict[str, Any] = {}
        text = chunk.text
        if self.options.refine:
            refined = self._answer("refine", chunk.text, self._refine, problems)
            if refined and refined["text"] != chunk.text:
                text = llm["refined"] = refined["text"]
        if self.options.enrich:
            llm.update(self._answer("enrich", text, self._enrich, problems) or {})
        if not llm:
            return chunk
        metadata = {**chunk.metadata, "llm": llm}
        if llm.get("keywords"):
            metadata["keywords"] = _with_document_keywords(chunk.metadata, llm["keywords"])
        return replace(chunk, metadata=metadata)

    def _answer(
        self,
        kind: str,
        text: str,
        ask: Callable[[str], dict[str, Any]],
        problems: list[str],
    ) -> dict[str, Any] | None:
        key = transform_key(kind, self.llm.model_id, PROMPT_VERSION, text)
        cached = self.cache.get(key)
        if cached is not None:
            answer: dict[str, Any] = json.loads(cached)
            return answer
        if self.failures >= _GIVE_UP_AFTER:
            problems.append(f"{kind}: {self.llm.model_id} failed {self.failures} times in a row")
            return None
        self.calls += 1
        try:
            answer = ask(text)
        except KnowhubError as exc:  # the model is down, or refuses: the next will be too
            self.failures += 1
            problems.append(f"{kind}: {exc}")
            return None
        except ValueError as exc:  # a malformed answer: this chunk's
            self.failures = 0
            problems.append(f"{kind}: {exc}")
            return None
        self.failures = 0
        self.cache.put(key, json.dumps(answer, ensure_ascii=False))
        return answer

    def _refine(self, text: str) -> dict[str, Any]:
        answer = self.llm.complete(
            [ChatMessage("system", REFINE_PROMPT), ChatMessage("user", text)],
            max_tokens=max(self.llm.max_tokens, len(text)),  # the whole text comes back
            temperature=0.0,
        ).strip()
        low, high = _REFINED_RATIO
        if not low * len(text) <= len(answer) <= high * len(text):
            raise ValueError(
                f"the refined text ({len(answer)} characters for {len(text)}) is a rewrite"
            )
        return {"text": answer}

    def _enrich(self, text: str) -> dict[str, Any]:
        answer = self.llm.complete(
            [ChatMessage("system", ENRICH_PROMPT), ChatMessage("user", text)],
            temperature=0.0,
            json_mode=True,
        )
        return parse_enrichment(answer)


def parse_enrichment(answer: str) -> dict[str, Any]:
    """The fields of an enrichment answer, checked and bounded.

    Raises:
        ValueError: not a JSON object, or a field missing or of the wrong type.
    """
    try:
        data = json.loads(answer)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not JSON ({exc}): {answer[:80]!r}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"the answer is not a JSON object: {answer[:80]!r}")
    fields: dict[str, Any] = {}
    for key, limit in _LIMITS.items():
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"the answer's {key!r} is not text: {value!r}"[:160])
        fields[key] = " ".join(value.split())[:limit]
    fields["keywords"] = _keywords(data.get("keywords"))
    return fields


def _keywords(value: Any) -> list[str]:
    """Keywords as a list of distinct short terms; a comma-separated string (as some models
    write them) is taken too."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"the answer's 'keywords' is not a list of text: {value!r}"[:160])
    keywords: dict[str, str] = {}
    for item in items:
        term = " ".join(item.split())[:_KEYWORD_CHARS]
        if term:
            keywords.setdefault(term.casefold(), term)
    if not keywords:
        raise ValueError("the answer has no keywords")
    return list(keywords.values())[:_MAX_KEYWORDS]


def _with_document_keywords(metadata: dict[str, Any], keywords: list[str]) -> list[str]:
    """The chunk's keywords: a document's own ``keywords`` value (front matter, a PDF
    property) first, so that filtering on it still finds every chunk."""
    own = metadata.get("keywords")
    return [own, *keywords] if isinstance(own, str) and own else keywords
