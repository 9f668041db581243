"""Warm-up: load every lazily loaded model and index before a server reports ready.

Everything here also loads on first use, once, under a lock; warming only moves that
cost out of the first requests (which, arriving together on a fresh server, would all
wait for it) and makes a bad setting stop the start-up with its own message.
"""

from __future__ import annotations

import logging

from knowhub.app import App
from knowhub.errors import KnowhubError
from knowhub.lang import load_tokenizers

__all__ = ["warm"]

log = logging.getLogger("knowhub")


def warm(app: App) -> None:
    """Open the store, build every provider and load: the tokenizers (jieba's dictionary,
    the stemmers), the embedder's model, the reranker's model, and each collection's
    search index (the SQLite store's derived index: postings, filter columns, vectors)
    with its version's embedder.

    Raises:
        KnowhubError: a provider cannot be built (a bad setting, a missing extra). A
            collection that cannot be warmed is only logged: it fails on its own requests.
    """
    load_tokenizers()
    store = app.store
    app.llm  # noqa: B018 - builds the client, so its settings are checked now
    app.embedder.warm()
    stage = app.reranker
    if stage is not None:
        stage.reranker.warm()
    for view in app.collections():
        try:
            handle = app.collection(view.name)
            cid = store.collection_id(handle.target.physical)
            if cid is not None:
                store.dense_search(cid, handle.embedder.embed_query("warm-up"), 1, {})
        except KnowhubError as exc:
            log.warning("collection %r not warmed: %s", view.name, exc)
