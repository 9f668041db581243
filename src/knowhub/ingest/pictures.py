"""Ingest's side of pictures inside documents: the options loaders get from settings, the
vision model's captions (cached by picture), and the list a document record keeps.

A caption is asked once per picture and model: it is kept beside the picture
(:meth:`~knowhub.providers.images.ImageStore.keep_note`), so a re-ingest, another collection
or a new version of the document costs no call for a picture already described.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowhub import registry
from knowhub.config import Settings
from knowhub.errors import ConfigError, KnowhubError
from knowhub.ingest.loaders.figures import Captioner, CaptionError, ImageOptions
from knowhub.models import Chunk, DocumentImage
from knowhub.providers.images import ImageStore, image_store
from knowhub.providers.llms.base import LLM
from knowhub.providers.llms.messages import ChatMessage, ImageInput

__all__ = ["image_entries", "image_options"]

# Changing the prompt changes the cache key: pictures are described again, not mixed.
CAPTION_PROMPT = (
    "You describe pictures found in documents for a search index. Say what the picture "
    "shows in 1-4 sentences: its kind (photo, chart, diagram, screenshot, table, logo), its "
    "subject, and every label, number and word written in it, in the language it is "
    "written in. No preamble."
)
_CAPTION_TOKENS = 300
# Failures in a row after which the run stops asking (the model is down, or takes no
# images): each would otherwise wait out its timeout and retries.
_GIVE_UP_AFTER = 3


def image_options(settings: Settings) -> ImageOptions:
    """The loaders' picture options for ``settings`` (``ingest.images``).

    Raises:
        ConfigError: a vision model is set but no LLM provider is.
    """
    options = settings.ingest.images
    if not options.extract:
        return ImageOptions()
    store = image_store(Path(settings.data_dir))
    caption = _captioner(settings, store) if options.vision_model else None
    return ImageOptions(store, options.min_side, options.max_per_document, caption)


def image_entries(images: Sequence[DocumentImage], chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """What a document record keeps of its pictures (``metadata["knowhub"]["images"]``):
    each with the chunk that describes it, or that holds the text around it."""
    entries = []
    for image in images:
        entries.append(
            {
                "sha256": image.sha256,
                "mime": image.mime,
                "width": image.width,
                "height": image.height,
                "page": image.page,
                "description": image.description,
                "described_by": image.described_by,
                "chunk_id": _chunk_of(image, chunks),
            }
        )
    return entries


def _chunk_of(image: DocumentImage, chunks: Sequence[Chunk]) -> str | None:
    if image.start is not None:
        for chunk in chunks:
            if chunk.char_start <= image.start < chunk.char_end:
                return chunk.chunk_id
    on_page = [c for c in chunks if image.page is not None and c.page == image.page]
    return on_page[0].chunk_id if on_page else None


def _captioner(settings: Settings, store: ImageStore) -> Captioner:
    model = settings.ingest.images.vision_model
    provider = settings.llm.provider
    if provider == "none":
        raise ConfigError(
            f"ingest.images.vision_model is {model!r} but llm.provider is none: set llm.provider "
            "(openai, azure or ollama) to the server that runs it, or unset the vision model"
        )
    llm = settings.llm.model_copy(update={"model": model})
    if provider == "azure":  # Azure names a deployment, not a model, in each request
        llm = llm.model_copy(update={"azure": llm.azure.model_copy(update={"deployment": model})})
    vision = settings.model_copy(update={"llm": llm})
    chat: LLM = registry.create("llm", provider, vision)
    return _Captions(chat, store)


class _Captions:
    """A vision model's captions, each asked once per picture (kept in the image store)."""

    def __init__(self, llm: LLM, store: ImageStore) -> None:
        self.llm = llm
        self.store = store
        digest = hashlib.sha256(f"{llm.model_id}\n{CAPTION_PROMPT}".encode()).hexdigest()
        self.key = f"caption-{digest[:16]}"
        self.failures = 0
        self.lock = threading.Lock()

    def __call__(self, sha: str, data: bytes, mime: str) -> str:
        kept = self.store.note(sha, self.key)
        if kept is not None:
            return kept
        with self.lock:
            if self.failures >= _GIVE_UP_AFTER:
                raise CaptionError(f"{self.llm.model_id} failed {self.failures} times in a row")
        question = ChatMessage("user", "Describe this picture.", images=(ImageInput(data, mime),))
        try:
            text = self.llm.complete(
                [ChatMessage("system", CAPTION_PROMPT), question], max_tokens=_CAPTION_TOKENS
            ).strip()
        except KnowhubError as exc:
            with self.lock:
                self.failures += 1
            raise CaptionError(str(exc)) from exc
        with self.lock:
            self.failures = 0
        self.store.keep_note(sha, self.key, text)
        return text
