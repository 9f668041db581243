"""What every caller of one data directory shares: settings, providers, caches, the tracer.

A :class:`Runtime` is built once per served data directory (per connection to its store:
the MCP server keeps one for queries and one for ingests). Its providers load on first use.
It decides nothing about who calls: :class:`knowhub.app.App` is a runtime seen by one
:class:`~knowhub.caller.Caller`, and every collection handle
(:class:`knowhub.collection.Collection`) holds the runtime and its caller.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import cast

from knowhub import registry
from knowhub.config import Settings
from knowhub.errors import ConfigError, KnowhubError
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.llms.base import LLM
from knowhub.providers.rerankers.base import Reranker
from knowhub.providers.stores.base import Store
from knowhub.query.cache import SearchCaches
from knowhub.query.rerank import RerankStage
from knowhub.trace.jsonl import read_traces
from knowhub.trace.record import Trace, new_trace
from knowhub.trace.tracer import Tracer, build_tracer
from knowhub.versions.record import embedder_spec

__all__ = ["Runtime"]


class Runtime:
    """One data directory's store, models, caches and tracer, built once and shared."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        interface: str = "python",
        served: Callable[[], str] | None = None,
    ) -> None:
        """``embedder``: one already loaded, to share between runtimes (server sessions);
        ``interface``: who calls (cli, mcp, http), recorded in every trace; ``served``: the
        collection a server was started for (an MCP server's folder), which a request
        naming none means (:mod:`knowhub.default_collection`)."""
        self.settings = settings
        self.interface = interface
        self.served = served
        self.caches = SearchCaches.sized(
            settings.search.query_cache_size, settings.search.result_cache_size
        )
        if embedder is not None:
            self.__dict__["embedder"] = embedder  # fills the cached_property below
        self._version_embedders: dict[str, Embedder] = {}
        self._embedders_lock = threading.Lock()
        # One change at a time (an ingest, a removal, an FAQ or bundle import), whichever
        # interface asks: two writers of one collection would race on its files' records.
        # Re-entrant: a server holds it around an ingest whose handle takes it again.
        self.writing = threading.RLock()

    @cached_property
    def store(self) -> Store:
        return cast("Store", registry.create("store", self.settings.store.provider, self.settings))

    @cached_property
    def embedder(self) -> Embedder:
        embedder: Embedder = registry.create(
            "embedder", self.settings.embedder.provider, self.settings
        )
        return embedder

    @cached_property
    def reranker(self) -> RerankStage | None:
        """The rerank stage, or None when ``reranker.provider`` is ``none`` (the default)."""
        opts = self.settings.reranker
        reranker: Reranker | None = registry.create("reranker", opts.provider, self.settings)
        if reranker is None:
            return None
        if not isinstance(reranker, Reranker):
            raise ConfigError(
                f"reranker provider {opts.provider!r} built {type(reranker).__name__}, which is "
                "not a knowhub.providers.rerankers.Reranker: fix the plugin's factory"
            )
        return RerankStage(reranker, opts.provider, opts.candidates, opts.timeout_s)

    @cached_property
    def tracer(self) -> Tracer:
        return build_tracer(self.settings)

    @cached_property
    def llm(self) -> LLM | None:
        """The answering model, or None for ``llm.provider: none`` (extractive answers)."""
        return cast("LLM | None", registry.create("llm", self.settings.llm.provider, self.settings))

    def embedder_with(self, settings: Settings) -> Embedder:
        """The embedder ``settings`` configure, loaded once per runtime (its own one when
        they configure the same)."""
        spec = embedder_spec(settings)
        if spec == embedder_spec(self.settings):
            return self.embedder
        key = json.dumps(spec, sort_keys=True)
        with self._embedders_lock:
            if key not in self._version_embedders:
                built: Embedder = registry.create("embedder", settings.embedder.provider, settings)
                self._version_embedders[key] = built
            return self._version_embedders[key]

    # -- traces

    def traces(self) -> Iterator[Trace]:
        """Every recorded trace of this data dir, oldest first, whoever ran it."""
        return read_traces(Path(self.settings.data_dir) / "traces")

    @contextmanager
    def traced(self, kind: str, collection: str, query: str | None) -> Iterator[Trace]:
        """A trace of the block's run, emitted when it ends, with the error if it failed."""
        trace, clock = new_trace(kind, self.interface, collection)
        trace.query = query
        try:
            yield trace
        except KnowhubError as exc:
            trace.error = str(exc)
            raise
        except Exception as exc:  # a bug still leaves a trace saying what broke
            trace.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.emit(trace, clock)

    def emit(self, trace: Trace, clock: float) -> None:
        """Write ``trace``, begun at ``clock`` (perf_counter), with the read version's revision."""
        trace.duration_ms = round((time.perf_counter() - clock) * 1000.0, 3)
        if trace.kb_version is not None:
            try:
                cid = self.store.collection_id(trace.kb_version["physical"])
                revision = None if cid is None else self.store.version(cid)
            except KnowhubError:
                revision = None  # an unreadable collection is the trace's error
            # A collection that does not exist was not read: the trace's error says so.
            trace.kb_version = (
                None if revision is None else {**trace.kb_version, "revision": revision}
            )
        self.tracer.emit(trace)

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()
