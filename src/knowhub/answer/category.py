"""The question's category, which picks the prompt profile an LLM answer is written with.

Rules first: keyword patterns per category in English, Chinese and Russian, tried in
priority order (pricing, compliance, troubleshooting, how-to): the protective profiles win
when a question touches them ("How do I fix the billing error?" is pricing — its figures
must come from the sources). No rule: ``general``, or, with
``answer.profiles.llm_classifier``, the LLM's choice (JSON mode); any failure of that
call keeps ``general`` and says why in ``note``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from knowhub.config.answer import CATEGORIES, ProfileSettings
from knowhub.errors import KnowhubError
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = ["Category", "classify"]

_RULES = {
    "pricing": (
        r"\b(price[sd]?|pricing|costs?|fees?|charged?|billing|billed|invoices?|subscriptions?"
        r"|discounts?|refunds?|quotes?|how much|per (user|seat|month|year))\b|[$€£¥]"
        r"|价格|多少钱|费用|收费|计费|定价|报价|折扣|退款|订阅|发票|价钱"
        r"|\b(цен|стоимост|сколько стоит|тариф|оплат|плат[аеёи]|сч[её]т|скидк|возврат|подписк"
        r"|руб)"
    ),
    "compliance": (
        r"\b(complian\w*|gdpr|hipaa|soc ?2|iso ?27001|regulat\w*|legal|laws?|polic(y|ies)"
        r"|audits?|privacy|data protection|consent|certif\w*|obligations?|required by)\b"
        r"|合规|法规|监管|隐私|审计|数据保护|认证|法律|政策|等保|个人信息"
        r"|\b(соответстви|закон|регулятор|персональн|конфиденциальн|аудит|политик|сертифи|152-фз)"
    ),
    "troubleshooting": (
        r"\b(errors?|fail(s|ed|ing|ure)?|not working|doesn'?t work|broken|crash\w*|issues?"
        r"|problems?|fix\w*|troubleshoot\w*|can'?t|cannot|unable|time[ds]? ?out|refused|debug\w*)\b"
        r"|错误|报错|失败|无法|不能|故障|异常|崩溃|排查|超时"
        r"|\b(ошибк|не работает|сбо[йя]|не удаётся|не удается|не могу|проблем|исправ|падает"
        r"|зависает|таймаут)"
    ),
    "how-to": (
        r"^\s*how (do|can|should|to)\b|\b(how to|steps? to|set ?up|configure|install|enable)\b"
        r"|如何|怎么|怎样|步骤|设置|配置|安装|启用"
        r"|^\s*как\b|\b(инструкци|настро|установ|включ|подключ)"
    ),
}
_PATTERNS = {name: re.compile(rule, re.IGNORECASE) for name, rule in _RULES.items()}

_PROMPT = (
    "Classify the user's question to a document assistant into one category. Reply with "
    'JSON only: {"category": "pricing" | "compliance" | "troubleshooting" | "how-to" | '
    '"general"}. pricing: prices, fees, plans, billing. compliance: laws, regulations, '
    "policies, audits, privacy, certifications. troubleshooting: an error or something not "
    "working. how-to: steps to do or set up something. general: anything else."
)


@dataclass
class Category:
    """``name`` (one of :data:`knowhub.config.CATEGORIES`), how it was found (``rules``,
    ``llm``, ``default`` when nothing matched, ``fallback`` when the LLM failed), and the
    prompt profile it maps to."""

    name: str
    by: str
    profile: str
    note: str | None = None


def classify(question: str, settings: ProfileSettings, llm: LLM | None = None) -> Category:
    """The category of ``question``; ``llm`` is asked only when no rule matches."""
    for name, pattern in _PATTERNS.items():
        if pattern.search(question):
            return Category(name, "rules", settings.profile_for(name))
    if llm is None or not settings.llm_classifier:
        return Category("general", "default", settings.profile_for("general"))
    try:
        messages = [ChatMessage("system", _PROMPT), ChatMessage("user", question)]
        raw = llm.complete(messages, json_mode=True, max_tokens=30, temperature=0.0)
        name = json.loads(raw)["category"]
        if name not in CATEGORIES:
            raise ValueError(f"unknown category {name!r}")
    except (KnowhubError, ValueError, KeyError, TypeError) as exc:
        note = f"category classifier failed, answering as general: {exc}"
        return Category("general", "fallback", settings.profile_for("general"), note)
    return Category(name, "llm", settings.profile_for(name))
