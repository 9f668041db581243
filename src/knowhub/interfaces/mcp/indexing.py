"""What every data-tool result says while the knowledge base is being indexed.

An agent cannot see the server's log or ``/health``: a search during the first sync of
a served folder would answer "no results", or hits from the part indexed so far, as if
they were the whole truth. So each result carries ``indexing`` (structured) and opens
with a sentence saying how far indexing got; a failure says it too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import anyio.to_thread
from pydantic import BaseModel, Field

from knowhub.errors import AuthError, ConfigError, KnowhubError
from knowhub.interfaces.mcp.kb import Indexing, KnowledgeBase

__all__ = [
    "Indexed",
    "IndexingOut",
    "indexing_note",
    "indexing_out",
    "not_created_yet",
    "noting_indexing",
    "wait_for_first_sync",
]

log = logging.getLogger("knowhub.mcp")


class IndexingOut(BaseModel):
    state: str = Field(description="'running': results may be incomplete.")
    collection: str = Field(description="The collection being indexed.")
    files_done: int = Field(description="Files indexed so far.")
    files_total: int | None = Field(description="Files to index; null while being listed.")
    chunks_done: int = Field(description="Chunks embedded so far.")
    chunks_total: int = Field(description="Chunks known to need embedding so far.")
    first_sync: bool = Field(
        description="The served folder's first indexing since the server started: results "
        "cover only the files indexed so far."
    )


class Indexed(BaseModel):
    """A data tool's structured result: ``indexing`` is set while an ingest runs."""

    indexing: IndexingOut | None = Field(
        default=None,
        description="Set while documents are being indexed (the result may be incomplete: "
        "ask again once it is null).",
    )


def indexing_out(kb: KnowledgeBase) -> IndexingOut | None:
    now = kb.indexing()
    if now is None:
        return None
    return IndexingOut(
        state="running",
        collection=now.collection,
        files_done=now.files_done,
        files_total=now.files_total,
        chunks_done=now.chunks_done,
        chunks_total=now.chunks_total,
        first_sync=now.first_sync,
    )


def indexing_note(now: IndexingOut | Indexing) -> str:
    """One sentence for the top of a result: how far indexing got, and what it means."""
    where = (
        f"{now.files_done} of {now.files_total} files"
        if now.files_total is not None
        else "files still being listed"
    )
    if now.chunks_total:
        where += f", {now.chunks_done} of {now.chunks_total} chunks embedded"
    if now.first_sync:
        return (
            f"Indexing in progress (collection {now.collection!r}: {where}): results cover "
            "only the documents indexed so far; search again shortly for complete results."
        )
    return (
        f"Re-indexing in progress (collection {now.collection!r}: {where}): results may "
        "miss the latest changes to the documents."
    )


def not_created_yet(kb: KnowledgeBase, collection: str) -> bool:
    """The collection an ingest running now is about to create: "no results yet", not an
    "unknown collection" error the agent would take for a wrong name."""
    now = kb.indexing()
    if now is None or now.collection != collection:
        return False
    return all(c.name != collection for c in kb.reader.collections())


async def wait_for_first_sync(kb: KnowledgeBase, seconds: float, tool: str) -> None:
    """Give the first sync of the served folder up to ``seconds`` to end."""
    if kb.synced.is_set() or seconds <= 0:
        return
    log.info("%s waits up to %.1f s for the first sync to end", tool, seconds)
    await anyio.to_thread.run_sync(lambda: kb.synced.wait(seconds))


@contextmanager
def noting_indexing(kb: KnowledgeBase) -> Iterator[None]:
    """A failure while indexing runs says so: "no chunk with id …" may only mean "not yet"."""
    try:
        yield
    except (AuthError, ConfigError):
        raise  # not a thing that may be missing for now
    except KnowhubError as exc:
        now = kb.indexing()
        if now is None:
            raise
        raise KnowhubError(f"{exc} ({indexing_note(now)})") from exc
