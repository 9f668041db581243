"""``knowhub serve http`` under load: bounded threads and memory, probes that still answer.

Real server processes; requests are held inside the server by fake model servers that
answer nothing until the test lets them (tests/reranking.py, knowhub.testing.llm_server), so
each test knows exactly how many requests hold a thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from fastapi.testclient import TestClient
from websockets.sync.client import connect

from knowhub import build_app
from knowhub.interfaces.http import create_app
from knowhub.testing.llm_server import LlmServer
from knowhub.testing.llm_server import serve as serve_llm
from tests.helpers import WAIT_S, fast_settings, write
from tests.http_helpers import FULL, TOKEN_ENV, ApiServer, api_server, build_corpus
from tests.mcp_helpers import wait_until
from tests.reranking import jina
from tests.reranking import serve as serve_reranker


def _health(server: ApiServer) -> dict[str, Any]:
    response = server.get("/health")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=64) as executor:
        yield executor


def _fire(pool: ThreadPoolExecutor, n: int, call: Callable[[], Any]) -> list[Future[Any]]:
    return [pool.submit(call) for _ in range(n)]


# -- /health and /ready while every worker is busy ----------------------------------------


def test_health_and_ready_answer_while_every_worker_is_blocked(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    data = build_corpus(tmp_path)
    release = threading.Event()

    def rerank(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        release.wait(60)  # each search holds its worker until the test lets it go
        return jina(path, body)

    with serve_reranker(rerank) as reranker:
        env = {
            **TOKEN_ENV,
            "KNOWHUB_RERANKER__PROVIDER": "http",
            "KNOWHUB_RERANKER__HTTP__URL": reranker.url + "/v1/rerank",
            "KNOWHUB_RERANKER__TIMEOUT_S": "60",
        }
        with api_server(cwd=tmp_path, data_dir=data, env=env, token=FULL) as server:
            try:
                # More searches than anyio's default pool (40 threads) had: all workers taken.
                search = {"query": "backups"}
                searches = _fire(pool, 48, lambda: server.post("/api/search", json=search))
                wait_until(lambda: len(reranker.requests) >= 16)
                health = _health(server)
                ready = httpx.get(server.url + "/ready", timeout=WAIT_S)  # public: no token
                # Answered while the searches still waited on the reranker, not after them.
                assert not any(search.done() for search in searches)
                assert health["status"] == "ok" and health["collections"] == 2
                assert ready.status_code == 200 and ready.json() == {"status": "ready"}
                # The worker pool is bounded (server.workers, 16); the rest wait their turn.
                busy = wait_until(lambda: (h := _health(server))["queued"] == 32 and h)
                assert busy["workers_busy"] == 16 and len(reranker.requests) == 16
            finally:
                release.set()
            assert all(search.result().status_code == 200 for search in searches)


def test_ready_is_503_until_the_warm_up(tmp_path: Path) -> None:
    data = build_corpus(tmp_path)
    app = create_app(fast_settings(data))
    cold = TestClient(app, base_url="http://127.0.0.1")  # no lifespan: not warmed up
    response = cold.get("/ready")
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    assert response.json() == {"error": "warming up: models and indexes are loading", "status": 503}
    assert cold.get("/health").json()["ready"] is False
    with TestClient(app, base_url="http://127.0.0.1") as warm:  # the lifespan warms up
        assert warm.get("/ready").json() == {"status": "ready"}
        assert warm.get("/health").json()["ready"] is True


# -- answers: a bounded number of threads, then a bounded queue, then 503 -------------------


def test_answers_past_the_slots_and_the_queue_get_503_with_retry_after(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    data = build_corpus(tmp_path)
    with ExitStack() as model:
        # The model sends one token, then nothing until it stops: each answer holds its slot.
        llm = model.enter_context(serve_llm(fail="stall", times=None))
        env = {
            **TOKEN_ENV,
            "KNOWHUB_LLM__PROVIDER": "openai",
            "KNOWHUB_LLM__MODEL": "m",
            "KNOWHUB_LLM__BASE_URL": llm.openai_base,
            "KNOWHUB_LLM__MAX_RETRIES": "0",
            "KNOWHUB_SERVER__MAX_ANSWERS": "2",
            "KNOWHUB_SERVER__MAX_QUEUED": "1",
        }
        with api_server(cwd=tmp_path, data_dir=data, env=env, token=FULL) as server:
            try:
                held = _overflow_answers(server, llm, pool)
            finally:
                model.close()  # the model goes: every held answer ends
            # The streams had started (each ends with an error event); the queued one ran.
            assert [s.result(timeout=60) for s in held[:2]] == [200, 200]
            assert held[2].result(timeout=60) != 503


def _overflow_answers(
    server: ApiServer, llm: LlmServer, pool: ThreadPoolExecutor
) -> list[Future[int]]:
    """Two answers streaming (max_answers 2), one queued (max_queued 1): the next is refused."""
    question = {"question": "How often do database backups run?"}

    def stream() -> int:
        with httpx.stream(
            "POST",
            server.url + "/api/ask",
            headers=server.headers(),
            json={**question, "stream": True},
            timeout=60,
        ) as response:
            for _ in response.iter_lines():
                pass
            return response.status_code

    streams = _fire(pool, 2, stream)
    # Busy counts a slot from before its model call: on a loaded machine (xdist workers)
    # the second answer may not have reached the model yet.
    wait_until(lambda: _health(server)["answers_busy"] == 2 and len(llm.requests) == 2)
    queued = pool.submit(lambda: server.post("/api/ask", json=question).status_code)
    wait_until(lambda: _health(server)["queued"] == 1)
    refused = server.post("/api/ask", json=question)
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
    assert "server.max_queued" in refused.json()["error"]
    with connect(
        server.ws_url, additional_headers=server.headers(), proxy=None, open_timeout=WAIT_S
    ) as ws:
        ws.send(json.dumps(question))
        event = json.loads(ws.recv(timeout=WAIT_S))
    assert event["event"] == "error" and event["status"] == 503
    assert len(llm.requests) == 2  # the queued answer has not started
    assert _health(server)["answers_busy"] == 2
    return [*streams, queued]


# -- memory ----------------------------------------------------------------------------


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_fresh_server_loads_jieba_once_before_twenty_concurrent_chinese_searches(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    write(tmp_path / "docs/leave.md", "# 年假\n\n员工每年享有十五天带薪年假，需提前两周申请。\n")
    data = tmp_path / "data"
    app = build_app(fast_settings(data))
    try:
        assert not app.collection().ingest([tmp_path / "docs"]).failed
    finally:
        app.close()
    with api_server(cwd=tmp_path, data_dir=data) as server:
        assert server.get("/ready").status_code == 200  # warm before it listens at all
        before = _rss_kb(server.process.pid)
        barrier = threading.Barrier(20)

        def search() -> httpx.Response:
            barrier.wait(timeout=WAIT_S)
            return server.post("/api/search", json={"query": "年假有多少天"})

        results = [f.result() for f in _fire(pool, 20, search)]
        grown_mb = (_rss_kb(server.process.pid) - before) / 1024
    assert all(r.status_code == 200 and r.json()["hits"] for r in results)
    # Each thread loading its own dictionary grew it by ~700 MB; generous for allocator noise.
    assert grown_mb < 150, f"RSS grew {grown_mb:.0f} MB"
