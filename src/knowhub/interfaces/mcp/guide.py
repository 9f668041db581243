"""What the server tells an agent about itself: generated instructions, and the prompts.

Agents forget to use a knowledge base they were not told about. The ``instructions`` a
client gets (in ``initialize``'s result; in ``server/discover``'s on protocol 2026-07-28,
which has no handshake) are written for its caller when it asks: the collections it may
read, how many documents each holds, their languages and the titles of the largest, and
which tool to call when. The text is bounded (at most :data:`MAX_COLLECTIONS` collections,
:data:`MAX_TITLES` titles each, each title cut), whatever the data.

The one prompt, ``answer_with_citations``, turns a question into the instructions to
search, read around the hits and cite them as [n].
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

from mcp_types import GetPromptResult, Prompt, PromptArgument, PromptMessage, TextContent

from knowhub.app import App
from knowhub.models import DocumentRecord
from knowhub.versions.record import CollectionView

__all__ = ["FALLBACK", "MAX_CHARS", "PROMPTS", "Instructions", "instructions", "prompt"]

MAX_COLLECTIONS = 6
MAX_TITLES = 3
MAX_TITLE_CHARS = 50
MAX_CHARS = 1500  # the most it may be: the last collections give way to fit

FALLBACK = (
    "knowhub searches the user's own documents. Call query_knowledge_hub with the user's "
    "question, answer from the passages it returns and cite them as [n]; use read_document "
    "to read around a hit and list_collections to see what is indexed."
)

_WHEN = (
    "When the user asks about anything these documents may cover, search them before "
    "answering from memory: query_knowledge_hub (numbered passages; cite them as [n]), then "
    "read_document with a hit's chunk_id to read its neighbours, or with its source_hash to "
    "read the whole document page by page. ask writes a cited answer in one call. Each "
    "document is also a resource: knowhub://COLLECTION/DOC_ID."
)


class Instructions:
    """:func:`instructions`, kept per caller until a collection it reads changes (each
    connection asks; the titles and languages cost a read of the largest documents)."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._kept: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, reader: App) -> str:
        views = reader.collections()
        # The data dir too: shared mode's sessions are data dirs of their own, whose
        # collections may agree in name, write counter and size.
        key = repr(
            (
                reader.caller,
                str(reader.settings.data_dir),
                [(v.name, v.active_version, v.version, v.documents) for v in views],
            )
        )
        with self._lock:
            if key in self._kept:
                return self._kept[key]
        text = instructions(reader, views)
        with self._lock:
            if len(self._kept) >= self._size:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = text
        return text


def instructions(reader: App, views: Sequence[CollectionView] | None = None) -> str:
    """The instructions for ``reader``'s caller (it reads the store: call it in a thread);
    ``views``: its collections, if read already."""
    views = reader.collections() if views is None else views
    if not views:
        return (
            "knowhub searches the user's own documents; nothing this client may read was "
            "indexed when it connected (the first indexing may be running). " + _WHEN
        )
    head = f"knowhub searches the user's own documents: {_count(len(views), 'collection')}."
    about = [_about(reader, view.name) for view in views[:MAX_COLLECTIONS]]
    while True:  # long names or titles: the last collections give way
        more = len(views) - len(about)
        tail = [f"- and {more} more (list_collections)"] if more else []
        text = "\n".join([head, *about, *tail, _WHEN])
        if len(text) <= MAX_CHARS or not about:
            return text[:MAX_CHARS]
        about.pop()


def _about(reader: App, name: str) -> str:
    """One collection's line: documents, languages, titles of the largest documents."""
    handle = reader.collection(name)
    records = sorted(handle.documents(), key=lambda r: r.char_count, reverse=True)
    largest = records[:MAX_TITLES]
    languages = Counter(
        hit.language for record in largest for hit in handle.document_chunks(record)
    )
    shown = ", ".join(lang for lang, _ in languages.most_common(3) if lang)
    titles = "; ".join(_title(r) for r in largest)
    return (
        f"- {name}: {_count(len(records), 'document')}"
        + (f" (languages: {shown})" if shown else "")
        + (f"; largest: {titles}" if titles else "")
    )


def _title(record: DocumentRecord) -> str:
    title = " ".join((record.title or record.source).split())
    return repr(title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


PROMPTS = [
    Prompt(
        name="answer_with_citations",
        title="Answer with citations from the knowledge base",
        description="Answer a question from the indexed documents, citing passages as [n].",
        arguments=[
            PromptArgument(name="question", description="The question to answer.", required=True),
            PromptArgument(
                name="collection",
                description="The collection to search (default: the server's).",
                required=False,
            ),
        ],
    )
]


def prompt(name: str, arguments: dict[str, str] | None) -> GetPromptResult:
    """The prompt ``name`` filled with ``arguments``.

    Raises:
        ValueError: no such prompt, or its question is missing; the message says which.
    """
    if name != "answer_with_citations":
        raise ValueError(f"no prompt {name!r}: the prompts are answer_with_citations")
    given = arguments or {}
    question = given.get("question", "").strip()
    if not question:
        raise ValueError("answer_with_citations: give the question argument")
    where = (
        f' with collection="{given["collection"]}"' if given.get("collection", "").strip() else ""
    )
    text = (
        f"Answer this question from the knowledge base: {question}\n\n"
        f"1. Search first: call query_knowledge_hub{where} with the question (rephrase and "
        "search again if the passages miss it).\n"
        "2. Read around the best hits: call read_document with a hit's chunk_id (before/after "
        "for its neighbours), or with its source_hash for the whole document.\n"
        "3. Answer only from the passages you read, citing each claim as [n] with the "
        "passage's number, and list the sources cited at the end. If the passages do not "
        "answer it, say so rather than guess."
    )
    return GetPromptResult(
        description=f"Answer {question[:80]!r} with citations",
        messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))],
    )
