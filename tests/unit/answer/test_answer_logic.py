"""Answer logic without a server: sentences, evidence, extractive answers, citation checks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from knowhub.answer.citations import check_citations
from knowhub.answer.events import kind_of
from knowhub.answer.extractive import extractive_answer
from knowhub.answer.pipeline import answer_events, collect
from knowhub.answer.prompt import build_messages
from knowhub.answer.router import route
from knowhub.answer.text import coverage
from knowhub.config import AnswerSettings
from knowhub.lang.sentences import sentences
from knowhub.models import Hit
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.testing.hits import hit


def _hit(
    n: int, text: str, source: str = "", page: int | None = None, relevance: float = 0.9
) -> Hit:
    return hit(
        text,
        chunk_id=f"c{n}",
        score=1.0 - n / 10,
        source=source or f"doc{n}.md",
        page=page,
        section_path="Guide > Backups",
        line_end=4,
        relevance=relevance,
    )


# Relevance as a search for the backup questions below gives it (see knowhub.query.relevance).
BACKUPS = _hit(
    1,
    "# Backups\n\nThe timer takes an incremental database\nbackup every 6 hours. "
    "Full backups run nightly.\n\nOld backups are kept for 35 days.",
)
VPN = _hit(2, "Connect to the VPN before you open the admin console.", relevance=0.6)


def test_sentences_join_wrapped_prose_and_keep_bullets_apart() -> None:
    assert sentences(BACKUPS.text) == [
        "The timer takes an incremental database backup every 6 hours.",
        "Full backups run nightly.",
        "Old backups are kept for 35 days.",
    ]
    assert sentences("Heron arm gets sensing\nOsprey pilot in Q3\n- third item") == [
        "Heron arm gets sensing",
        "Osprey pilot in Q3",
        "third item",
    ]
    assert sentences("数据库每六小时备份一次。完整备份每晚进行！") == [
        "数据库每六小时备份一次。",
        "完整备份每晚进行！",
    ]


def test_table_rows_read_as_column_value_pairs() -> None:
    table = "| model | charge_min |\n| --- | --- |\n| OL-1000 | 95 |\n| FT-40 | 60 |"
    assert sentences(table) == ["model: OL-1000; charge_min: 95", "model: FT-40; charge_min: 60"]


def test_coverage_counts_stemmed_question_terms() -> None:
    # "backup" is there; "often" and "taken" are not
    assert coverage("How often are backups taken?", BACKUPS.text) == 1 / 3
    assert coverage("capital of France", BACKUPS.text) == 0.0
    assert coverage("the of and", BACKUPS.text) == 0.0  # stopwords only
    assert coverage("备份", "数据库每六小时备份一次。") == 1.0


def test_extractive_answer_quotes_the_sentence_with_the_rare_question_terms() -> None:
    # "backup" is in three of the four sentences, "kept" in one: the sentence holding only
    # "backup" scores under half the best and is left out.
    text = extractive_answer("How long are backups kept?", [VPN, BACKUPS], max_sentences=2)
    assert text == "Old backups are kept for 35 days. [2]"
    # No shared word (found by meaning): the top source's opening stands in.
    assert extractive_answer("capital of France", [VPN, BACKUPS]) == (
        "Connect to the VPN before you open the admin console. [1]"
    )
    assert extractive_answer("anything", []) == ""


def test_citations_must_exist_and_support_their_sentence() -> None:
    sources = [BACKUPS, VPN]
    good = check_citations("Backups are kept for 35 days [1]. Use the VPN [2].", sources, 0.3)
    assert (good.claims, good.supported, good.invalid, good.score) == (2, 2, [], 1.0)
    after = check_citations("Backups are kept for 35 days. [1] Use the VPN. [2]", sources, 0.3)
    assert (after.claims, after.supported, after.uncited) == (2, 2, 0)
    bad = check_citations(
        "Backups are kept for 35 days [7]. The moon is made of cheese [1]. No citation here.",
        sources,
        0.3,
    )
    assert bad.invalid == [7] and bad.cited == [7, 1]
    assert bad.unsupported == [("The moon is made of cheese .", 1)] or bad.unsupported[0][1] == 1
    assert (bad.claims, bad.supported, bad.uncited) == (2, 0, 1)
    assert bad.score == 0.0


def test_the_prompt_numbers_sources_before_the_question() -> None:
    hit = _hit(1, "Text one.", source="guide.pdf", page=3)
    history = [ChatMessage("user", "earlier"), ChatMessage("assistant", "reply")]
    messages = build_messages("What now?", [hit], history)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert "[1] guide.pdf — page 3 — section: Guide > Backups\nText one." in messages[0].content
    assert "cite" in messages[0].content and messages[-1].content == "What now?"


class ScriptedLLM(LLM):
    """Streams a fixed answer word by word; records the messages it got."""

    model_id = "fake:scripted"

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls: list[list[ChatMessage]] = []

    def _complete(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float, json_mode: bool
    ) -> str:
        self.calls.append(messages)
        return self.answer

    def _stream(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float
    ) -> Iterator[str]:
        self.calls.append(messages)
        for word in self.answer.split(" "):
            yield word + " "


def _retrieve(hits: list[Hit]):  # type: ignore[no-untyped-def]
    return lambda query: (hits, {"lexical": 1.0})


def test_llm_answers_stream_tokens_and_carry_checked_citations() -> None:
    llm = ScriptedLLM("Backups are kept for 35 days [1].")
    events = list(
        answer_events(
            "How long are backups kept?", _retrieve([BACKUPS, VPN]), llm, AnswerSettings()
        )
    )
    kinds = [kind_of(e) for e in events]
    assert kinds[:2] == ["stage", "sources"] and kinds[-1] == "end"
    assert kinds.count("token") == 7
    end = events[-1].to_dict()
    assert end["hit_type"] == "rag" and end["model"] == "fake:scripted"
    assert end["answer"] == "Backups are kept for 35 days [1]."
    assert end["citations"]["supported"] == 1 and end["confidence"] > 0.7
    assert {"retrieval", "prompt_build", "llm_first_token", "llm_total"} <= set(end["timings_ms"])
    assert end["sources"][0]["n"] == 1 and end["sources_count"] == 2


def test_an_unsupported_answer_lowers_confidence() -> None:
    good = collect(
        answer_events(
            "How long are backups kept?",
            _retrieve([BACKUPS]),
            ScriptedLLM("Backups are kept for 35 days [1]."),
            AnswerSettings(),
        )
    )
    bad = collect(
        answer_events(
            "How long are backups kept?",
            _retrieve([BACKUPS]),
            ScriptedLLM("Penguins live in Antarctica [3]."),
            AnswerSettings(),
        )
    )
    assert bad["confidence"] < good["confidence"]
    assert bad["citations"]["invalid"] == [3] and any("do not exist" in n for n in bad["notes"])


def test_no_relevant_source_means_no_answer_and_no_llm_call() -> None:
    llm = ScriptedLLM("Paris [1].")
    unrelated = [replace(BACKUPS, relevance=0.1), replace(VPN, relevance=0.0)]
    end = collect(
        answer_events("What is the capital of France?", _retrieve(unrelated), llm, AnswerSettings())
    )
    assert end["hit_type"] == "insufficient_context" and llm.calls == []
    assert end["answer"] == "The documents do not cover this question."
    assert "is below answer.min_evidence" in end["notes"][0]
    assert [s["relevance"] for s in end["sources"]] == [0.1, 0.0]  # the nearest misses, shown
    ru = collect(
        answer_events(
            "Какая столица Франции?",
            _retrieve(unrelated[:1]),
            None,
            AnswerSettings(),
            language="ru",
        )
    )
    assert ru["answer"] == "В документах нет ответа на этот вопрос."


def test_rules_route_greetings_and_questions_about_the_assistant() -> None:
    for text in (
        "hello",
        "Hi there!",
        "thanks",
        "你好",
        "谢谢！",
        "Привет",
        "who are you?",
        "你能做什么",
        "что ты умеешь?",
    ):
        found = route(text)
        assert found.intent == "chat" and found.by == "rules" and found.reply, text
        assert found.ms >= 0  # timed in the trace; speed belongs in benchmarks, not here
    for text in ("hello world program in C", "How do backups work?", "谢谢你的报销制度是什么"):
        assert route(text).intent == "search", text


def test_llm_router_extracts_filters_and_comparisons_and_falls_back() -> None:
    found = route(
        "only the ops docs: backups?",
        ScriptedLLM('{"intent": "filter", "filters": {"team": "ops"}, "queries": []}'),
    )
    assert (found.intent, found.by, found.filters) == ("filter", "llm", {"team": "ops"})
    compare = route(
        "Kestrel vs Osprey battery",
        ScriptedLLM(
            '{"intent": "compare", "filters": {}, "queries": ["Kestrel battery", "Osprey battery"]}'
        ),
    )
    assert compare.queries == ["Kestrel battery", "Osprey battery"]
    for reply in ("not json", '{"intent": "dance"}', '{"intent": "filter", "filters": {}}'):
        fallback = route("backups?", ScriptedLLM(reply))
        assert fallback.intent == "search" and fallback.by == "fallback" and fallback.note


# A source a search found for "How long are backups kept?" that is not about it: it shares
# one word, so an extractive answer used to quote it and an LLM used to see it.
LOGS = _hit(3, "Audit logs are kept in the vault.", source="audit.md", relevance=0.2)


def test_sources_below_the_floor_are_neither_quoted_nor_prompted_nor_listed() -> None:
    question = "How long are backups kept?"
    extractive = collect(
        answer_events(question, _retrieve([BACKUPS, LOGS]), None, AnswerSettings())
    )
    assert "vault" not in extractive["answer"] and "35 days. [1]" in extractive["answer"]
    assert [s["source"] for s in extractive["sources"]] == ["doc1.md"]
    assert "1 source(s) below answer.min_evidence 0.40 left out" in extractive["notes"]
    llm = ScriptedLLM("Backups are kept for 35 days [1].")
    collect(answer_events(question, _retrieve([LOGS, BACKUPS]), llm, AnswerSettings()))
    prompt = llm.calls[0][0].content
    assert "[1] doc1.md" in prompt and "audit.md" not in prompt and "vault" not in prompt


def test_confidence_follows_the_sources_relevance() -> None:
    def confidence(relevance: float) -> float:
        hit = replace(BACKUPS, relevance=relevance)
        answer = collect(
            answer_events(
                "How long are backups kept?",
                _retrieve([hit]),
                ScriptedLLM("Backups are kept for 35 days [1]."),
                AnswerSettings(),
            )
        )
        assert answer["hit_type"] == "rag" and answer["citations"]["score"] == 1.0
        return float(answer["confidence"])

    assert confidence(0.95) == 0.95 and confidence(0.55) == 0.55


def test_an_extractive_answer_leaves_out_sentences_sharing_one_word() -> None:
    backups = _hit(1, "Database backups are kept for 35 days. The timer runs hourly.")
    logs = _hit(2, "Audit logs are kept for two years.", source="audit.md")
    text = extractive_answer("How long are database backups kept?", [backups, logs])
    assert text == "Database backups are kept for 35 days. [1]"  # 3 of 4 terms, not 1 of 4


def test_coverage_reads_the_relevant_hits_past_the_sources_quoted() -> None:
    # "The documents do not mention X" is a claim about the documents: a name a relevant
    # hit just past the five quoted holds is mentioned; one held only by an irrelevant hit,
    # or by none, is not.
    filler = [_hit(n, f"Backups of volume {n} run nightly.") for n in range(1, 6)]
    sixth = _hit(6, "Snapshots of the Ceph pool run hourly.")
    counts = lambda terms, limit: {term: 1 for term in terms}  # noqa: E731  the index holds all

    def asked(hits: list[Hit]) -> dict[str, object]:
        question = "How often do Ceph backups run?"
        return collect(
            answer_events(question, _retrieve(hits), None, AnswerSettings(), counts=counts)
        )

    assert asked([*filler, sixth])["not_mentioned"] == []
    assert asked([*filler, replace(sixth, relevance=0.1)])["not_mentioned"] == ["Ceph"]
    assert asked(filler)["not_mentioned"] == ["Ceph"]
    past = [
        *filler,
        *[_hit(n, "Nothing here.") for n in range(6, 11)],
        replace(sixth, chunk_id="c11"),
    ]
    assert asked(past)["not_mentioned"] == ["Ceph"]  # only twice the sources are read
