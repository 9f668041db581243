"""Reranking inside a real search: off by default, switched by config, never fatal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, ConfigError, build_app, registry
from knowhub.config import Settings
from knowhub.providers.rerankers.base import Reranker
from tests import reranking
from tests.helpers import WAIT_S, fast_settings, write

QUERY = "database backup schedule"
DOCS = {
    # Repeats two query words, so fusion ranks it first, but says nothing useful…
    "a.md": "Database backup. Database backup, database backup: database backup.",
    "b.md": "Lunch menu for the cafeteria, and the schedule of the team lunch.",
    # …while this one answers (the fake reranker counts distinct query words).
    "c.md": "The database backup runs on a schedule: every six hours.",
}


@pytest.fixture
def plugin() -> Iterator[dict[str, Reranker]]:
    """Register provider ``fake`` whose instance the test chooses."""
    chosen: dict[str, Reranker] = {"reranker": reranking.OverlapReranker()}
    with registry.override("reranker", "fake", lambda settings: chosen["reranker"]):
        yield chosen


def make_app(tmp_path: Path, **overrides: object) -> App:
    app = build_app(fast_settings(tmp_path / "data", **overrides))
    for name, text in DOCS.items():
        write(tmp_path / "docs" / name, text + "\n")
    app.collection().ingest([tmp_path / "docs"])
    return app


def test_reranking_is_off_by_default(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    result = app.collection().search(QUERY, top_k=3)
    assert app.reranker is None and Settings().reranker.provider == "none"
    assert result.rerank.to_dict() == {"provider": "none", "used": False, "error": None, "ms": 0.0}
    assert "rerank" not in result.timings_ms
    assert [h.fused_rank for h in result.hits] == [1, 2, 3]
    assert all(h.score == h.fused_score and h.rerank_score is None for h in result.hits)


def test_one_line_switches_reranking_on(tmp_path: Path, plugin: dict[str, Reranker]) -> None:
    app = make_app(tmp_path, **{"reranker.provider": "fake"})
    fused = [h.source for h in make_app(tmp_path / "off").collection().search(QUERY, top_k=3).hits]
    result = app.collection().search(QUERY, top_k=3)
    assert result.rerank.used and result.rerank.error is None and "rerank" in result.timings_ms
    scores = [reranking.relevance(QUERY, h.text) for h in result.hits]
    assert scores == sorted(scores, reverse=True)  # the reranker's order…
    assert [h.source for h in result.hits] != fused  # …which differs from fusion's
    for hit in result.hits:
        assert hit.score == hit.rerank_score and hit.fused_score is not None
        assert fused[hit.fused_rank - 1] == hit.source  # fused rank kept


def test_reranker_sees_max_of_candidates_and_top_k(
    tmp_path: Path, plugin: dict[str, Reranker]
) -> None:
    fake = reranking.OverlapReranker()
    plugin["reranker"] = fake
    app = make_app(tmp_path, **{"reranker.provider": "fake", "reranker.candidates": 2})
    assert len(app.collection().search(QUERY, top_k=1).hits) == 1
    assert len(fake.calls[-1][1]) == 2
    assert len(app.collection().search(QUERY, top_k=3).hits) == 3
    assert len(fake.calls[-1][1]) == 3
    assert fake.calls[-1][0] == QUERY


def test_min_score_applies_to_the_relevance_not_the_fused_or_rerank_score(
    tmp_path: Path, plugin: dict[str, Reranker]
) -> None:
    """Fusion ranks a.md first (fused score 1.0) but it holds 2 of the 3 query terms; the
    hashing embedder has no calibration, so relevance is that share alone."""
    fake = reranking.OverlapReranker()
    plugin["reranker"] = fake
    app = make_app(tmp_path, **{"reranker.provider": "fake"})
    every = app.collection().search(QUERY, top_k=3).hits
    assert {h.source: h.relevance for h in every} == pytest.approx(
        {"c.md": 1.0, "a.md": 2 / 3, "b.md": 1 / 3}
    )
    assert next(h.fused_score for h in every if h.source == "a.md") == 1.0
    best = app.collection().search(QUERY, top_k=3, min_score=0.99).hits
    assert [(h.source, h.fused_rank) for h in best] == [("c.md", 2)]
    # Cut before reranking: the reranker orders only what is left.
    assert [h.source for h in app.collection().search(QUERY, top_k=3, min_score=0.5).hits] == [
        "c.md",
        "a.md",
    ]
    assert len(fake.calls[-1][1]) == 2


@pytest.mark.parametrize("failure", ["broken", "timeout"])
def test_reranker_failure_keeps_the_fused_order(
    tmp_path: Path, plugin: dict[str, Reranker], failure: str
) -> None:
    blocked = reranking.BlockedReranker()
    plugin["reranker"] = reranking.BrokenReranker() if failure == "broken" else blocked
    # 0.2 s is the setting under test, for the reranker that never answers; a broken one
    # raises at once, which a loaded machine may take longer than that to show.
    timeout_s = 0.2 if failure == "timeout" else WAIT_S
    app = make_app(tmp_path, **{"reranker.provider": "fake", "reranker.timeout_s": timeout_s})
    try:
        result = app.collection().search(QUERY, top_k=3)
    finally:
        blocked.release.set()
    assert [h.fused_rank for h in result.hits] == [1, 2, 3]
    assert all(h.rerank_score is None and h.score == h.fused_score for h in result.hits)
    assert not result.rerank.used and result.rerank.provider == "fake"
    assert result.rerank.error is not None
    assert ("timed out" if failure == "timeout" else "CUDA out of memory") in result.rerank.error
    assert result.to_dict()["rerank"]["error"] == result.rerank.error


def test_http_endpoint_down_keeps_the_fused_order(tmp_path: Path) -> None:
    url = reranking.closed_port_url()
    app = make_app(
        tmp_path,
        **{"reranker.provider": "http", "reranker.http.url": url, "reranker.http.style": "tei"},
    )
    result = app.collection().search(QUERY, top_k=3)
    assert [h.fused_rank for h in result.hits] == [1, 2, 3]
    assert result.rerank.error is not None and "cannot reach" in result.rerank.error


def test_http_reranker_reorders_a_real_search(tmp_path: Path) -> None:
    with reranking.serve(reranking.tei) as server:
        app = make_app(
            tmp_path,
            **{
                "reranker.provider": "http",
                "reranker.http.style": "tei",
                "reranker.http.url": server.url + "/rerank",
            },
        )
        result = app.collection().search(QUERY, top_k=3)
    assert result.rerank.used
    assert result.hits[0].source == "c.md"
    assert sorted(server.requests[0][2]["texts"]) == sorted(h.text for h in result.hits)


def test_unknown_reranker_lists_the_known_ones(tmp_path: Path) -> None:
    app = make_app(tmp_path, **{"reranker.provider": "colbert"})
    with pytest.raises(ConfigError, match="known: cross-encoder, http, llm, none"):
        app.collection().search(QUERY)


def test_a_plugin_that_builds_no_reranker_is_a_config_error(tmp_path: Path) -> None:
    with registry.override("reranker", "odd", lambda settings: object()):
        app = make_app(tmp_path, **{"reranker.provider": "odd"})
        with pytest.raises(ConfigError, match=r"not a knowhub\.providers\.rerankers\.Reranker"):
            app.collection().search(QUERY)
