"""Ingest's settings: which files, how much each may cost, OCR of scans, cleanup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from knowhub.config.base import Section
from knowhub.config.web import WebSettings
from knowhub.scope import SCOPE_KEYS, document_scope

__all__ = ["GitSettings", "ImageSettings", "IngestSettings", "TransformSettings"]


class ImageSettings(Section):
    """Pictures inside PDF, Word and PowerPoint files (docs/formats.md, "Pictures")."""

    extract: bool = Field(
        True, description="Keep pictures under DATA_DIR/images and describe them in the text."
    )
    min_side: int = Field(
        64, ge=1, description="A picture narrower or lower than this (pixels) is passed over."
    )
    max_per_document: int = Field(100, ge=0, description="The most pictures kept per document.")
    vision_model: str = Field(
        "",
        description="A model of llm.provider that takes images: it captions each picture once "
        "(cached by picture). Empty: OCR of the picture's text, else its alternative text.",
    )


class GitSettings(Section):
    """Git repositories ingested by their clone URL (docs/sources.md, "Git repositories")."""

    timeout_s: float = Field(
        600.0,
        gt=0,
        description="A git command (a clone or fetch, above all) not done within this many "
        "seconds fails the source: an unreachable or silent host, a repository too large.",
    )


class TransformSettings(Section):
    """LLM transforms of chunks, through the configured ``llm.*`` (off: no call is made)."""

    refine: bool = Field(
        False,
        description="Have the LLM clean each chunk's OCR noise and hyphenation; the cleaned text "
        "is what is embedded and indexed, the chunk keeps its exact text for citations.",
    )
    enrich: bool = Field(
        False,
        description="Have the LLM write each chunk's title, summary, keywords and a question it "
        "answers: searchable, shown in results, keywords filterable.",
    )
    cache_entries: int = Field(
        200_000,
        ge=100,
        description="Answers kept in the data dir's LLM transform cache (by chunk text, model "
        "and prompt): a re-ingest asks nothing again; the oldest go first.",
    )


class IngestSettings(Section):
    include: list[str] = Field(default_factory=list, description="Glob patterns to keep.")
    exclude: list[str] = Field(
        default_factory=lambda: [".*", "~$*", "node_modules/*", "*/node_modules/*", "*.tmp"]
    )
    max_file_bytes: int = Field(
        200_000_000, ge=1, description="Larger files, or Office files unpacking to more, fail."
    )
    max_extracted_chars: int = Field(
        50_000_000, ge=1, description="A file whose text runs past this fails (bounds memory)."
    )
    # Archives and mailboxes (docs/sources.md, "Archives and mailboxes"): read in memory,
    # member by member, within these bounds, so a decompression bomb costs seconds.
    archive_max_members: int = Field(
        10_000,
        ge=1,
        description="An archive or mailbox with more members (files, messages, attachments) "
        "is refused whole, before any member is read.",
    )
    archive_max_bytes: int = Field(
        2_000_000_000,
        ge=1,
        description="An archive whose members unpack to more bytes in all (as declared, and "
        "as counted while unpacking) is refused whole; each member also has max_file_bytes.",
    )
    archive_max_ratio: int = Field(
        200,
        ge=1,
        description="A member (of a tar: the whole stream) unpacking past 1 MB to more than "
        "this many times its compressed size is refused as a decompression bomb.",
    )
    archive_max_depth: int = Field(
        2,
        ge=1,
        description="Archives inside archives are read this many levels deep (1: none); a "
        "deeper one is passed over with a warning.",
    )
    progress_interval_s: float = Field(
        10.0,
        ge=0,
        description="Seconds between ingest progress lines on stderr when it is not a terminal "
        "(logs, CI; 0 = a line per step); also the MCP server's sync log lines.",
    )
    max_seconds_per_file: float = Field(
        300.0,
        ge=0,
        description="A file not read (parsed, OCR'd, cleaned, chunked) within this many seconds "
        "fails, the rest of the run goes on; checked between pages and steps (0 = no limit).",
    )
    long_file_warning_s: float = Field(
        120.0,
        ge=0,
        description="Warn before a file whose chunks would take longer than this to embed, "
        "at the measured rate.",
    )
    # OCR (docs/formats.md, "Scanned PDFs and images"): Tesseract in-process, chosen by
    # measurement (docs/benchmarks.md, "OCR engines").
    ocr: bool = Field(
        True, description="Read scanned PDF pages and image files with OCR (Tesseract)."
    )
    ocr_languages: str = Field(
        "eng+chi_sim+rus",
        pattern=r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$",
        description="Tesseract language models, '+'-joined; a page mostly in Chinese is read "
        "again with the Chinese model(s) alone.",
    )
    ocr_dpi: int = Field(
        200, ge=70, le=600, description="Resolution scanned PDF pages are read at."
    )
    ocr_tessdata: Path | None = Field(
        None,
        description="Folder of Tesseract's *.traineddata; unset: TESSDATA_PREFIX, else the "
        "usual system folders.",
    )
    ocr_max_pages: int = Field(
        200,
        ge=0,
        description="A file with more pages to read by OCR fails (a TIFF before any is read); "
        "about what OCR reads in ingest.max_seconds_per_file (0 = no limit).",
    )
    ocr_max_megapixels: float = Field(
        40.0, gt=0, description="A larger page or image is not read (bounds OCR's memory)."
    )
    images: ImageSettings = ImageSettings()

    cleanup: bool = Field(
        True,
        description="Remove headers and footers repeated on most pages, join words hyphenated "
        "across line breaks and collapse runs of whitespace in PDF, Office and OCR text "
        '(docs/formats.md, "Cleanup and transforms").',
    )

    transforms: TransformSettings = TransformSettings()
    git: GitSettings = GitSettings()

    web: WebSettings = WebSettings()

    scope: dict[str, str] = Field(
        default_factory=dict,
        description="Default data scope of ingested documents (tenant, dataset, visibility: "
        "public|internal|restricted, roles: a comma list); a document's own tags win "
        '(docs/security.md, "Data scope").',
    )

    @model_validator(mode="after")
    def _known_scope(self) -> IngestSettings:
        unknown = sorted(set(self.scope) - set(SCOPE_KEYS))
        if unknown:
            raise ValueError(
                f"ingest.scope: unknown key(s) {', '.join(unknown)}: use {', '.join(SCOPE_KEYS)}"
            )
        document_scope({}, self.scope, where="ingest.scope")  # a bad value fails at load
        return self

    @model_validator(mode="before")
    @classmethod
    def _renamed_max_file_mb(cls, data: Any) -> Any:
        # A renamed key gets its own message: "extra inputs are not permitted" says nothing
        # about what to write instead.
        if isinstance(data, dict) and "max_file_mb" in data:
            try:
                hint = f"{int(float(data['max_file_mb']) * 1024 * 1024)}"
            except (TypeError, ValueError):
                hint = "200000000"
            raise ValueError(
                "max_file_mb was replaced by ingest.max_file_bytes (a byte count): "
                f"write `max_file_bytes: {hint}` instead"
            )
        return data
