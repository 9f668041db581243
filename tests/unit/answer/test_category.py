"""The question's category by rules, in English, Chinese and Russian, and its profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.answer.category import classify
from knowhub.config.answer import ProfileSettings
from knowhub.errors import ConfigError
from tests.helpers import fast_settings

SETTINGS = ProfileSettings()


@pytest.mark.parametrize(
    ("question", "category"),
    [
        ("How much does the Team plan cost?", "pricing"),
        ("团队版多少钱？", "pricing"),
        ("Сколько стоит тариф «Команда»?", "pricing"),
        ("Is the service GDPR compliant?", "compliance"),
        ("我们的数据处理符合哪些法规？", "compliance"),
        ("Как обрабатываются персональные данные?", "compliance"),
        ("The agent shows connection refused", "troubleshooting"),
        ("代理启动失败怎么办？", "troubleshooting"),
        ("Агент выдаёт ошибку при запуске", "troubleshooting"),
        ("How do I configure the VPN?", "how-to"),
        ("如何配置VPN？", "how-to"),
        ("Как настроить VPN?", "how-to"),
        ("How do I fix the billing error?", "pricing"),  # protective profiles come first
        ("Who wrote the deployment guide?", "general"),
        ("部署指南是谁写的？", "general"),
        ("Кто автор руководства?", "general"),
    ],
)
def test_rules_classify_questions_in_three_languages(question: str, category: str) -> None:
    found = classify(question, SETTINGS)
    assert (found.name, found.profile) == (category, category)
    assert found.by == ("default" if category == "general" else "rules")


def test_a_category_maps_to_a_configured_profile() -> None:
    settings = ProfileSettings(
        templates={"strict": "Figures only."}, categories={"pricing": "strict"}
    )
    assert classify("What is the price?", settings).profile == "strict"
    assert settings.profiles["strict"] == "Figures only." and "general" in settings.profiles


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"answer.profiles.categories": {"sales": "general"}}, "unknown category 'sales'"),
        (
            {"answer.profiles.categories": {"pricing": "nope"}},
            "categories.pricing: no profile 'nope'",
        ),
        ({"answer.profiles.templates": {"blank": " "}}, "answer.profiles.templates.blank is empty"),
    ],
)
def test_bad_profile_settings_name_the_setting(
    tmp_path: Path, overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        fast_settings(tmp_path / "data", **overrides)
