"""What a document was extracted without, so that a file indexed before OCR or a vision model
could read all of it is read again once one can.

A scanned page read while OCR was off, before Tesseract's language data was installed, or
over the pixel limit, is indexed as nothing; a picture indexed before a vision model was
configured has no caption; a document indexed by an older knowhub lacks what loaders extract
now (pictures, tables in PDFs; the sections of plain text). Its file does not change, so
integrity (size, mtime, sha256) would never read it again. So each PDF, Office, image and
plain-text document records what it lacked (``metadata["knowhub"]["extraction"]``), and a run
reads it again when that run can do better: OCR that runs with other settings than those that
left pages unread, a vision model where pictures had none (or another), picture extraction
turned on, or a newer version of its format's extraction (:data:`EXTRACTION_VERSION`,
:data:`TEXT_EXTRACTION_VERSION`). Never merely because a setting changed: turning OCR off must
not drop the text of scans already read. Its vectors mostly come from the embedding cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from knowhub.config import Settings
from knowhub.ingest.loaders.common import Limits
from knowhub.ingest.loaders.ocr import Ocr, OcrOptions
from knowhub.ingest.pictures import image_options
from knowhub.models import DocumentRecord, LoadedDocument

__all__ = ["EXTRACTION_VERSION", "TEXT_EXTRACTION_VERSION", "Extraction", "run_limits"]

# Raised when what the PDF, Office or image loaders extract changes (pictures, tables in
# PDFs, cleanup: 2), so that documents indexed before are read again by the new code.
EXTRACTION_VERSION = 2
# Raised when what the ``.txt`` loader finds changes (sections, man pages: 1; the page's
# name heading a man page's paths: 2; entries of pages saved with ``col -b``, keyword
# entries, Russian NAME sections: 3). Apart from the other formats: re-reading every PDF
# for a change to plain text would cost OCR again.
TEXT_EXTRACTION_VERSION = 3
_VERSIONS = {
    "pdf": EXTRACTION_VERSION,
    "docx": EXTRACTION_VERSION,
    "pptx": EXTRACTION_VERSION,
    "image": EXTRACTION_VERSION,
    "ipynb": EXTRACTION_VERSION,  # its plots are pictures
    "text": TEXT_EXTRACTION_VERSION,
}
_WITH_PICTURES = frozenset({"pdf", "docx", "pptx", "ipynb"})


class Extraction:
    """What one ingest run can extract (OCR's availability is checked once, when needed)."""

    def __init__(self, settings: Settings, ocr: OcrOptions) -> None:
        self.images = settings.ingest.images
        self.vision = f"{settings.llm.provider}:{self.images.vision_model}"
        self.ocr = ocr

    @cached_property
    def ocr_key(self) -> str:
        """The OCR settings, or "" when OCR cannot run (off, no engine, no language data)."""
        ocr = self.ocr
        if not ocr.enabled or Ocr(ocr).problem is not None:
            return ""
        facts = [ocr.languages, ocr.dpi, ocr.max_pixels, str(ocr.tessdata)]
        return hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:16]

    def record(self, loaded: LoadedDocument) -> dict[str, Any] | None:
        """What to record of ``loaded``'s extraction; None for a format that needs none."""
        version = _VERSIONS.get(loaded.format)
        if version is None:
            return None
        if loaded.format == "text":
            return {"version": version}
        uncaptioned = sum(1 for image in loaded.images if image.described_by != "vision")
        facts: dict[str, Any] = {"version": version, "pictures": self.images.extract}
        if loaded.unread_pages:
            facts["unread_pages"] = len(loaded.unread_pages)
            facts["ocr"] = self.ocr_key
        if uncaptioned:
            facts["uncaptioned"] = uncaptioned
            # With a vision model, an uncaptioned picture is one it failed on (down, or no
            # image input): recorded as none, so that the next run asks again.
            facts["vision"] = ""
        if loaded.metadata.get("ocr_pages") or any(i.described_by == "ocr" for i in loaded.images):
            facts["ocr_read"] = True
        return facts

    def rereadable(self, record: DocumentRecord) -> bool:
        """Whether reading ``record``'s file again keeps what was indexed: not when OCR read
        some of it and cannot run now (its scans would be dropped)."""
        own = record.metadata.get("knowhub")
        facts = own.get("extraction") if isinstance(own, Mapping) else None
        ocr_read = isinstance(facts, Mapping) and facts.get("ocr_read")
        return not ((ocr_read or record.metadata.get("ocr_pages")) and not self.ocr_key)

    def stale(self, record: DocumentRecord) -> bool:
        """Whether this run would extract more of ``record``'s file than was."""
        if record.format not in _VERSIONS:
            return False
        own = record.metadata.get("knowhub")
        facts = own.get("extraction") if isinstance(own, Mapping) else None
        facts = facts if isinstance(facts, Mapping) else {}
        if not self.rereadable(record):
            return False
        if facts.get("version") != _VERSIONS[record.format]:
            return True
        if self.images.extract and not facts.get("pictures") and record.format in _WITH_PICTURES:
            return True
        if facts.get("unread_pages") and self.ocr_key and facts.get("ocr") != self.ocr_key:
            return True
        vision = self.vision if self.images.vision_model else ""
        return bool(facts.get("uncaptioned") and vision and facts.get("vision") != vision)


def run_limits(settings: Settings) -> Limits:
    """What one file may cost, and how scans and pictures are read, for ``settings``."""
    options = settings.ingest
    ocr = OcrOptions(
        enabled=options.ocr,
        languages=options.ocr_languages,
        dpi=options.ocr_dpi,
        tessdata=options.ocr_tessdata,
        max_pixels=round(options.ocr_max_megapixels * 1_000_000),
        max_pages=options.ocr_max_pages,
    )
    return Limits(options.max_file_bytes, options.max_extracted_chars, ocr, image_options(settings))
