"""Two ``knowhub serve http`` replicas over one store (one data dir, or one PostgreSQL
database), behind a round-robin proxy: what the integration and browser tests of stateless
replicas run against."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from knowhub.testing.llm_server import LlmServer, serve
from tests.http_helpers import TOKEN_ENV, ApiServer, api_server, build_corpus, llm_env
from tests.integration.test_http_answers import answer_for
from tests.pg_server import shared_server
from tests.round_robin import RoundRobin, round_robin

__all__ = ["BACKENDS", "Replicas", "llm", "pair", "replicas"]

BACKENDS = ["sqlite", "postgres"]
_URL_ENV = "KH_TEST_REPLICAS_PG_URL"


@dataclass
class Replicas:
    """The two servers and the proxy in front of them."""

    first: ApiServer
    second: ApiServer
    proxy: RoundRobin

    @property
    def urls(self) -> set[str]:
        return {self.first.url, self.second.url}


@contextmanager
def replicas(root: Path, backend: str, llm: LlmServer | None = None) -> Iterator[Replicas]:
    """Two replicas serving the corpus of :func:`build_corpus` from ``backend``: over SQLite
    they share its data dir; over PostgreSQL one database, each with a data dir of its own
    (where it keeps its uploads and traces)."""
    env = {**TOKEN_ENV, **(llm_env(llm) if llm is not None else {})}
    if backend == "postgres":
        url = shared_server().create_database()
        build_corpus(root, **{"store.provider": "postgres", "store.postgres.url": url})
        env |= {
            "KNOWHUB_STORE__PROVIDER": "postgres",
            "KNOWHUB_STORE__POSTGRES__URL_ENV": _URL_ENV,
            _URL_ENV: url,
        }
        dirs = [root / "replica-1", root / "replica-2"]
    else:
        dirs = [build_corpus(root)] * 2
    with ExitStack() as stack:
        first, second = (
            stack.enter_context(api_server(cwd=root, data_dir=d, env=env, token=None)) for d in dirs
        )
        _, proxy = stack.enter_context(round_robin(first.url, second.url))
        yield Replicas(first, second, proxy)


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmServer]:
    """The replicas' model: it rewrites follow-ups (see test_http_answers.answer_for)."""
    with serve(answer_for) as running:
        yield running


@pytest.fixture(scope="module", params=BACKENDS)
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, llm: LlmServer
) -> Iterator[Replicas]:
    """Two replicas over each backend in turn, behind their proxy."""
    if request.param == "postgres":
        request.getfixturevalue("pg_server")  # stops the shared server when the session ends
    with replicas(tmp_path_factory.mktemp(f"replicas-{request.param}"), request.param, llm) as two:
        yield two
