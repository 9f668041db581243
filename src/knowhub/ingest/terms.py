"""What the lexical index stores for a chunk: its words' terms, and the names its headings give.

A chunk's terms are those of its contextual text (:func:`knowhub.lang.index_tokens`), plus
the stopwords that its document's title and its heading chain use as names
(:func:`knowhub.lang.names.heading_names`: ``at`` in ``at(1) > DESCRIPTION``), so that a
question about the ``at`` command finds the ``at`` page. Documents record the version of this
scheme they were indexed with (``metadata["knowhub"]["lexical"]``); one indexed with an older
one is read again by the next ingest of its folder, as a document extracted by an older loader
is (its vectors come from the embedding cache: only its terms change).
"""

from __future__ import annotations

from collections.abc import Mapping

from knowhub.lang import index_tokens
from knowhub.lang.names import heading_names
from knowhub.models import Chunk, DocumentRecord

__all__ = ["LEXICAL_VERSION", "chunk_terms", "lexical_stale"]

LEXICAL_VERSION = 6
"""1: words only (no record of it); 2: with the names headings give; 3: with key chords
(``Ctrl+A``) and words of parts joined by ``_`` or ``-`` (``tcp_keepalive_time``) as one
term each; 4: with an amount and its unit written apart (``30 GiB``) as one term; 5: that
term stemmed as the amount written together is (``100 ms``: ``100m``, as ``100ms``), units
of two letters or more; 6: an amount after a colon or run into Chinese too (``系统：30 GiB``)."""


def chunk_terms(title: str, chunk: Chunk, text: str) -> str:
    """The space-separated terms to index for ``chunk`` of a document titled ``title``;
    ``text`` is the chunk's contextual text (section path, then text)."""
    names = heading_names([title, *chunk.section_path.split(" > ")])
    return " ".join(index_tokens(text) + names)


def lexical_stale(record: DocumentRecord) -> bool:
    """Whether ``record``'s chunks were indexed with an older :data:`LEXICAL_VERSION`."""
    own = record.metadata.get("knowhub")
    return not isinstance(own, Mapping) or own.get("lexical") != LEXICAL_VERSION
