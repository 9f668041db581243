"""Quality gates: each shortfall named with its size; misconfiguration never passes."""

from __future__ import annotations

import pytest

from knowhub.config import Settings, load_settings
from knowhub.errors import ConfigError
from knowhub.eval.answers import ANSWER_METRICS
from knowhub.eval.gate import Shortfall, check_gate, find_gate
from knowhub.eval.runner import METRICS
from tests.helpers import ROOT


def test_shortfall_says_metric_value_minimum_and_gap() -> None:
    assert str(Shortfall("ndcg@10", 0.7012, 0.72)) == "ndcg@10 0.701 < 0.720 (-0.019)"
    # Three decimals would print two equal numbers: more are shown.
    assert str(Shortfall("ndcg@10", 0.7196, 0.72)) == "ndcg@10 0.7196 < 0.7200 (-0.0004)"


def test_gate_lists_every_failing_metric() -> None:
    result = check_gate(
        "s",
        {"ndcg@10": 0.8, "mrr@10": 0.5, "recall@10": 0.9},
        {"ndcg@10": 0.75, "mrr@10": 0.6, "recall@10": 0.85},
    )
    assert not result.passed
    assert [f.metric for f in result.failures] == ["ndcg@10", "recall@10"]
    assert result.to_dict()["failures"][0] == "ndcg@10 0.750 < 0.800 (-0.050)"


def test_gate_passes_at_the_minimum() -> None:
    assert check_gate("s", {"ndcg@10": 0.72}, {"ndcg@10": 0.72}).passed


def test_unknown_or_unmeasured_metric_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"eval\.gates\.s: unknown metric 'ndcg10'"):
        check_gate("s", {"ndcg10": 0.5}, {"ndcg@10": 0.9})
    with pytest.raises(ConfigError, match="keyword_recall was not measured"):
        check_gate("s", {"keyword_recall": 0.5}, {"ndcg@10": 0.9})


def test_gate_is_found_by_name_then_collection() -> None:
    gates = {"scifact": {"ndcg@10": 0.72}, "mine": {"mrr@10": 0.5}}
    assert find_gate(gates, ["scifact", "mine"]) == ("scifact", {"ndcg@10": 0.72})
    assert find_gate(gates, ["other", "mine"]) == ("mine", {"mrr@10": 0.5})
    assert find_gate(gates, ["other"]) is None


def test_default_gates_hold_the_project_targets() -> None:
    gates = Settings().eval.gates
    assert gates["scifact"] == {"ndcg@10": 0.724}
    for name in ("xquad-en", "xquad-ru", "xquad-zh", "cmrc2018-zh"):
        assert gates[name] == {"ndcg@10": 0.95}
    for pair in ("en-ru", "en-zh", "ru-en", "ru-zh", "zh-en", "zh-ru", "en-en", "ru-ru", "zh-zh"):
        assert f"xling-{pair}-test" in gates  # `make eval` gates every direction
    # Answers on real documents: the targets, per group.
    assert gates["realdocs"] == {"near_miss_refused": 0.9, "answerable_refused": 0.05}
    assert gates["realdocs/xling"]["source_first"] == 0.85
    assert all(gates[f"realdocs/{g}"]["right_place"] == 0.9 for g in ("en", "zh", "ru", "xling"))


def test_example_config_documents_the_default_gates() -> None:
    settings = load_settings(config_file=ROOT / "knowhub.example.yaml", env={}, cwd=ROOT)
    assert settings.eval.gates == Settings().eval.gates


def test_each_run_checks_the_metrics_it_measures() -> None:
    gate = {"ndcg@10": 0.8, "faithfulness": 0.9, "hit_type_accuracy": 1.0}
    answers = {"faithfulness": 0.85, "hit_type_accuracy": 1.0}
    result = check_gate("g", gate, answers, ANSWER_METRICS)
    assert dict(result.thresholds) == {"faithfulness": 0.9, "hit_type_accuracy": 1.0}
    assert [str(f) for f in result.failures] == ["faithfulness 0.850 < 0.900 (-0.050)"]
    assert check_gate("g", gate, {"ndcg@10": 0.9}).passed  # the retrieval part alone
    both = check_gate("g", gate, {"ndcg@10": 0.9, **answers}, (*METRICS, *ANSWER_METRICS))
    assert [f.metric for f in both.failures] == ["faithfulness"]


def test_a_gate_without_this_runs_metrics_or_unmeasured_says_what_measures_them() -> None:
    with pytest.raises(ConfigError, match=r"sets no minimum this run measures .* --answers"):
        check_gate("g", {"faithfulness": 0.9}, {"ndcg@10": 0.9})
    with pytest.raises(ConfigError, match=r"llm_faithfulness was not measured .* llm.provider"):
        check_gate("g", {"llm_faithfulness": 0.9}, {"faithfulness": 1.0}, ANSWER_METRICS)
    with pytest.raises(ConfigError, match=r"hit_type_accuracy was not measured .* expected_hit"):
        check_gate("g", {"hit_type_accuracy": 0.9}, {"faithfulness": 1.0}, ANSWER_METRICS)
