"""Hybrid search behaviour on a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App, QueryError, build_app
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.query.pipeline import SearchRequest, search
from tests.helpers import fast_settings, write


def test_filters_apply_inside_both_legs_before_fusion(tmp_path: Path) -> None:
    # 30 "finance" documents outrank the single "legal" one on both legs; with only
    # 5 candidates per leg a filter applied after fusion would find nothing.
    app = build_app(fast_settings(tmp_path / "data", **{"search.candidates": 5}))
    for i in range(30):
        write(tmp_path / f"fin/{i}.md", f"Travel travel travel expenses report number {i}.\n")
    write(tmp_path / "legal/contract.md", "A contract clause mentions travel once.\n")
    app.collection().ingest([tmp_path / "fin"], tags={"dept": "finance"})
    app.collection().ingest([tmp_path / "legal"], tags={"dept": "legal"})
    unfiltered = app.collection().search("travel expenses", top_k=5)
    assert all(h.metadata["dept"] == "finance" for h in unfiltered.hits)
    result = app.collection().search("travel expenses", top_k=5, filters={"dept": "legal"})
    assert [h.source for h in result.hits] == ["contract.md"]
    assert result.counts["lexical"] == 1 and result.counts["dense"] == 1


def test_language_filter_uses_the_chunk_language(app: App, tmp_path: Path) -> None:
    write(tmp_path / "d/en.md", "Backups every six hours.\n")
    write(tmp_path / "d/ru.md", "Резервные копии каждые шесть часов. Backups.\n")
    app.collection().ingest([tmp_path / "d"])
    hits = app.collection().search("backups", filters={"language": "ru"}).hits
    assert [h.source for h in hits] == ["ru.md"]


def test_in_filters_match_any_value_in_both_legs(app: App, tmp_path: Path) -> None:
    for team in ("ops", "dev", "legal"):
        write(tmp_path / team / "note.md", f"Quarterly rota for the {team} team: backups.\n")
        app.collection().ingest([tmp_path / team], tags={"team": team})
    result = app.collection().search("backups rota", top_k=5, filters={"team": ("ops", "dev")})
    assert sorted(h.metadata["team"] for h in result.hits) == ["dev", "ops"]
    assert result.counts["lexical"] == 2 and result.counts["dense"] == 2
    mixed = app.collection().search(
        "backups", filters={"team": ("legal",), "language": ("en", "ru")}
    )
    assert [h.metadata["team"] for h in mixed.hits] == ["legal"]


def test_filter_keys_are_checked_against_the_collection(app: App, tmp_path: Path) -> None:
    write(tmp_path / "d/en.md", "---\nauthor: Ann\n---\nBackups every six hours.\n")
    write(tmp_path / "d/ru.md", "Резервные копии каждые шесть часов. Backups.\n")
    app.collection().ingest([tmp_path / "d"], tags={"team": "ops"})
    # "lang", as the docs once showed it, is the language column, not a silent zero.
    assert [
        h.source for h in app.collection().search("backups", filters={"lang": ("ru",)}).hits
    ] == ["ru.md"]
    by_author = app.collection().search("backups", filters={"author": "Ann", "team": "ops"}).hits
    assert [h.source for h in by_author] == ["en.md"]
    with pytest.raises(QueryError) as caught:
        app.collection().search("backups", filters={"teem": "ops"})
    assert "unknown key 'teem' in collection 'default'" in str(caught.value)
    assert "(author, roles, team, visibility)" in str(caught.value)  # scope keys too
    # A key that a later ingest brings is known from then on (the keys follow the version).
    write(tmp_path / "e/x.md", "Backups of the wiki.\n")
    app.collection().ingest([tmp_path / "e"], tags={"teem": "wiki"})
    assert [
        h.source for h in app.collection().search("backups", filters={"teem": "wiki"}).hits
    ] == ["x.md"]


def test_search_reports_each_stage_as_it_ends(app: App, tmp_path: Path) -> None:
    write(tmp_path / "d/a.md", "Backups run every six hours.\n")
    app.collection().ingest([tmp_path / "d"])
    heard: list[tuple[str, int]] = []
    app.collection().search("backups", on_stage=lambda stage, hits, ms: heard.append((stage, hits)))
    assert [s for s, _ in heard] == ["routing", "lexical", "dense", "fusion"]
    assert dict(heard)["lexical"] == 1 and dict(heard)["fusion"] == 1
    heard.clear()
    app.collection().search("backups", on_stage=lambda stage, hits, ms: heard.append((stage, hits)))
    assert heard == [("cache", 1)]


class EnglishOnly(HashingEmbedder):
    languages = frozenset({"en"})


def test_dense_leg_is_skipped_for_languages_the_embedder_does_not_know(
    app: App, tmp_path: Path
) -> None:
    write(tmp_path / "d/zh.md", "数据库每六小时备份一次。\n")
    write(tmp_path / "d/en.md", "The database is backed up every six hours.\n")
    app.collection().ingest([tmp_path / "d"])
    embedder = EnglishOnly(app.embedder.dim)
    embedder.model_id = app.embedder.model_id
    zh = search(app.store, embedder, app.settings.search, SearchRequest("数据库备份", "default"))
    en = search(
        app.store, embedder, app.settings.search, SearchRequest("database backup", "default")
    )
    assert not zh.dense_used and zh.counts["dense"] == 0 and zh.hits[0].source == "zh.md"
    assert en.dense_used and en.counts["dense"] > 0


def test_rrf_fusion_is_selectable(tmp_path: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data", **{"search.fusion": "rrf"}))
    write(tmp_path / "d/a.md", "Solar panels on the warehouse roof.\n")
    app.collection().ingest([tmp_path / "d"])
    hit = app.collection().search("solar panels").hits[0]
    assert hit.score == pytest.approx(1 / 61 + 1 / 61)  # rank 1 in both legs


def test_min_score_cuts_weak_hits(app: App, tmp_path: Path) -> None:
    write(tmp_path / "d/a.md", "Solar panels on the warehouse roof.\n")
    write(tmp_path / "d/b.md", "Roof repairs are booked in spring; panels of experts decide.\n")
    app.collection().ingest([tmp_path / "d"])
    everything = app.collection().search("solar panels warehouse", top_k=10).hits
    strict = app.collection().search("solar panels warehouse", top_k=10, min_score=0.99).hits
    assert len(everything) == 2 and [h.source for h in strict] == ["a.md"]


def test_hits_carry_ranks_of_both_legs(app: App, tmp_path: Path) -> None:
    write(tmp_path / "d/a.md", "Solar panels on the warehouse roof.\n")
    app.collection().ingest([tmp_path / "d"])
    hit = app.collection().search("solar panels").hits[0]
    assert (hit.lexical_rank, hit.dense_rank) == (1, 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "query is empty"),
        ({"query": "x" * 5000}, "over the 4096-byte limit"),
        ({"top_k": 0}, "top_k must be between 1 and 100"),
        ({"top_k": 101}, "top_k must be between 1 and 100"),
        ({"min_score": -0.5}, "min_score must be a number >= 0"),
        ({"min_score": float("nan")}, "min_score must be a number >= 0"),
        ({"collection": "../etc"}, "invalid collection name"),
        ({"collection": "absent"}, "unknown collection 'absent'"),
    ],
)
def test_invalid_requests_are_query_errors(
    app: App, tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    write(tmp_path / "d/a.md", "Solar panels.\n")
    app.collection().ingest([tmp_path / "d"])
    args: dict[str, object] = {"query": "solar", **kwargs}
    collection = args.pop("collection", None)
    with pytest.raises(QueryError, match=message):
        app.collection(collection).search(**args)  # type: ignore[arg-type]


def test_repeated_search_is_served_from_the_result_cache(app: App, tmp_path: Path) -> None:
    write(tmp_path / "d/a.md", "Solar panels on the warehouse roof.\n")
    app.collection().ingest([tmp_path / "d"])
    first = app.collection().search("solar panels")
    second = app.collection().search("solar panels")
    assert (first.cache["result"], first.cache["query_embedding"]) == ("miss", "miss")
    assert second.cache["result"] == "hit" and list(second.timings_ms) == ["cache"]
    assert [h.chunk_id for h in second.hits] == [h.chunk_id for h in first.hits]
    other_k = app.collection().search("solar panels", top_k=3)  # another key, same query text
    assert (other_k.cache["result"], other_k.cache["query_embedding"]) == ("miss", "hit")


def test_ingest_invalidates_cached_results(app: App, tmp_path: Path) -> None:
    write(tmp_path / "d/a.md", "Solar panels on the warehouse roof.\n")
    app.collection().ingest([tmp_path / "d"])
    assert [h.source for h in app.collection().search("solar panels").hits] == ["a.md"]
    write(tmp_path / "d/b.md", "Solar panels, solar panels: more solar panels.\n")
    app.collection().ingest([tmp_path / "d"])
    after = app.collection().search("solar panels")
    assert after.cache["result"] == "miss"
    assert {h.source for h in after.hits} == {"a.md", "b.md"}


def test_caches_can_be_disabled(tmp_path: Path) -> None:
    off = build_app(fast_settings(tmp_path / "data", **{"search.result_cache_size": 0}))
    write(tmp_path / "d/a.md", "Solar panels.\n")
    off.collection().ingest([tmp_path / "d"])
    off.collection().search("solar")
    assert off.collection().search("solar").cache["result"] == "miss"


def test_a_collection_built_with_another_embedder_is_a_clear_error(tmp_path: Path) -> None:
    built = build_app(fast_settings(tmp_path / "data"))
    write(tmp_path / "d/a.md", "Backups run nightly.\n")
    built.collection().ingest([tmp_path / "d"])
    built.close()
    other = build_app(fast_settings(tmp_path / "data", **{"embedder.hashing.dim": 128}))
    with pytest.raises(QueryError, match=r"built with embedder hashing-256 \(dim 256\), but"):
        other.collection().search("backups")
    other.close()
