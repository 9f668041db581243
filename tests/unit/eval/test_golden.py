"""Golden files: what they accept, and a file:line error for every mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from knowhub.errors import ConfigError
from knowhub.eval.golden import AnswerCase, add_case, load_answer_cases, load_golden
from tests.helpers import ROOT, write

GOOD = """[
  {"query": "when do backups run?", "expected_sources": ["guide.md"],
   "expected_keywords": ["02:30"]},
  {"id": "c", "query": "which chunk?", "expected_chunk_ids": ["abc_0001_12345678"]}
]
"""


def test_loads_sources_chunks_keywords_and_default_ids(tmp_path: Path) -> None:
    first, second = load_golden(write(tmp_path / "g.json", GOOD))
    assert (first.qid, first.unit, dict(first.relevant)) == ("q1", "source", {"guide.md": 1})
    assert first.keywords == ("02:30",) and first.line == 2
    assert (second.qid, second.unit, second.line) == ("c", "chunk", 4)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"query": "x"}', r"g.json: expected a JSON list .* got a JSON dict"),
        ("[\n  1,\n  2\n]", r"g.json:2: entry 1 is not an object"),
        (
            '[\n{"query": "a", "expected_sources": ["s"]},\n{"expected_sources": ["s"]}\n]',
            r'g.json:3: entry 2 has no "query"',
        ),
        ('[\n\n  {"query": "a"}]', r'g.json:3: entry 1 needs exactly one of "expected_sources"'),
        (
            '[{"query": "a", "expected_sources": ["s"], "expected_chunk_ids": ["c"]}]',
            r"g.json:1: entry 1 needs exactly one of",
        ),
        ('[{"query": "a", "expected_source": "s"}]', r"g.json:1: entry 1: unknown field"),
        ('[{"query": "a", "expected_sources": "s"}]', r'"expected_sources" must be a list'),
        ('[{"query": "a", "expected_sources": []}]', r'"expected_sources" is empty'),
        (
            '[{"id": "x", "query": "a", "expected_sources": ["s"]},\n'
            ' {"id": "x", "query": "b", "expected_sources": ["s"]}]',
            r"g.json:2: entry 2 repeats",
        ),
        ("[]", r"g.json: the list is empty"),
        ('[\n{"query": "a",\n "expected_sources": ["s"],,}]', r"g.json:3: not valid JSON"),
    ],
)
def test_bad_golden_file_names_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_golden(write(tmp_path / "g.json", text))


def test_missing_golden_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.json: no such file"):
        load_golden(tmp_path / "nope.json")


def test_example_golden_file_matches_the_example_questions() -> None:
    golden = json.loads((ROOT / "examples" / "golden.json").read_text(encoding="utf-8"))
    questions = yaml.safe_load((ROOT / "examples" / "questions.yaml").read_text(encoding="utf-8"))
    assert [g["query"] for g in golden] == [q["question"] for q in questions]
    for entry, question in zip(golden, questions, strict=True):
        assert entry["expected_sources"] == [question["expected_source"].removeprefix("docs/")]
        assert entry["expected_keywords"] == question.get("expected_facts", [])
    assert len(load_golden(ROOT / "examples" / "golden.json")) == len(questions)


def test_a_collection_judges_its_own_cases_and_those_naming_none(tmp_path: Path) -> None:
    path = write(
        tmp_path / "golden.json",
        """[
          {"query": "shared", "expected_sources": ["a.md"]},
          {"query": "mine", "expected_sources": ["b.md"], "collection": "handbook"},
          {"query": "theirs", "expected_sources": ["c.md"], "collection": "private"}
        ]""",
    )
    assert [q.text for q in load_golden(path)] == ["shared", "mine", "theirs"]
    assert [q.text for q in load_golden(path, "handbook")] == ["shared", "mine"]
    assert [q.text for q in load_golden(path, "private")] == ["shared", "theirs"]
    only_theirs = write(
        tmp_path / "theirs.json", '[{"query": "t", "expected_sources": ["c"], "collection": "p"}]'
    )
    with pytest.raises(ConfigError, match="no entry for collection 'handbook' \\(1 for others\\)"):
        load_golden(only_theirs, "handbook")
    bad = write(
        tmp_path / "bad.json", '[{"query": "t", "expected_sources": ["c"], "collection": 3}]'
    )
    with pytest.raises(ConfigError, match='"collection" must be a collection name'):
        load_golden(bad, "handbook")


def test_saved_cases_keep_their_collection_and_merge_only_within_it(tmp_path: Path) -> None:
    path = tmp_path / "saved.json"
    assert add_case(path, "How long are backups kept?", "ops.md", "handbook") == ("case-1", True)
    assert add_case(path, "How long are backups kept?", "dr.md", "handbook") == ("case-1", False)
    assert add_case(path, "How long are backups kept?", "x.md", "private") == ("case-2", True)
    assert add_case(path, "How long are backups kept?", "y.md") == ("case-3", True)
    entries = json.loads(path.read_text(encoding="utf-8"))
    assert [(e.get("collection"), e["expected_sources"]) for e in entries] == [
        ("handbook", ["ops.md", "dr.md"]),
        ("private", ["x.md"]),
        (None, ["y.md"]),
    ]


def test_answer_cases_read_every_expectation_and_need_no_sources(tmp_path: Path) -> None:
    path = write(
        tmp_path / "answers.json",
        """[
  {"id": "faq", "query": "How long are backups kept?", "expected_hit_type": "faq_direct",
   "expected_keywords": ["35 days"], "must_not_say": ["90 days"]},
  {"query": "Upgrade 4.1 to 4.4?", "expected_hit_type": "rag",
   "expected_sources": ["guide.md"]},
  {"query": "Backups?", "expected_sources": ["guide.md"]}
]""",
    )
    faq, rag, plain = load_answer_cases(path)
    assert faq == AnswerCase(
        "faq", "How long are backups kept?", 2, "faq_direct", ("35 days",), (), ("90 days",),
        "answers",
    )  # fmt: skip
    assert (rag.qid, rag.hit_type, rag.sources) == ("q2", "rag", ("guide.md",))
    assert (plain.hit_type, plain.sources) == (None, ("guide.md",))
    # A retrieval run judges only the entries that expect something to be found.
    assert [q.qid for q in load_golden(path)] == ["q2", "q3"]


def test_group_and_place_are_read_the_group_defaulting_to_the_file_stem(tmp_path: Path) -> None:
    path = write(
        tmp_path / "zh.json",
        """[
  {"id": "a", "query": "q1", "expected_sources": ["m.pdf"], "expected_section": " 2.1 安装 ",
   "expected_page": 12},
  {"id": "b", "query": "q2", "expected_sources": ["m.pdf"], "expected_page": [3, 5],
   "group": "xling"},
  {"id": "c", "query": "q3", "expected_hit_type": "insufficient_context", "group": "near"}
]""",
    )
    first, second, third = load_answer_cases(path)
    assert (first.group, first.section, first.pages) == ("zh", "2.1 安装", (12, 12))
    assert (second.group, second.section, second.pages) == ("xling", None, (3, 5))
    assert (third.group, third.answerable, first.answerable) == ("near", False, True)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            '{"id": "p", "query": "q", "expected_sources": ["s"], "expected_page": 0}',
            r"g.json:1: entry 1 \('p'\): \"expected_page\" is 0; give a page number \(1-based\)",
        ),
        (
            '{"id": "p", "query": "q", "expected_sources": ["s"], "expected_page": [5, 3]}',
            r"\('p'\): \"expected_page\" is \[5, 3\]; .* \[first, last\] with first <= last",
        ),
        (
            '{"id": "p", "query": "q", "expected_sources": ["s"], "expected_page": "4"}',
            r"\('p'\): \"expected_page\" is '4'",
        ),
        (
            '{"id": "s", "query": "q", "expected_sources": ["s"], "expected_section": ""}',
            r"\('s'\): \"expected_section\" must be a non-empty string, got ''",
        ),
        (
            '{"id": "g", "query": "q", "expected_sources": ["s"], "group": 3}',
            r"\('g'\): \"group\" must be a non-empty string, got 3",
        ),
        (
            '{"id": "n", "query": "q", "expected_hit_type": "rag", "expected_section": "A"}',
            r"\('n'\): \"expected_section\" is a place in an expected source, .* "
            r'no "expected_sources"',
        ),
    ],
)
def test_bad_group_or_place_names_case_and_field(tmp_path: Path, entry: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_answer_cases(write(tmp_path / "g.json", f"[{entry}]"))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            '{"id": "a", "query": "q", "expected_hit_type": "faq"}',
            r"g.json:1: entry 1 \('a'\): \"expected_hit_type\" is 'faq'; use one of faq_direct",
        ),
        (
            '{"id": "b", "query": "q", "expected_hit_type": "faq_direct", '
            '"expected_sources": ["s"]}',
            r"entry 1 \('b'\): \"expected_sources\" with \"expected_hit_type\" 'faq_direct'",
        ),
        (
            '{"query": "q", "expected_hit_type": "rag", "must_not_say": "never"}',
            r'entry 1: "must_not_say" must be a list of non-empty strings',
        ),
        (
            '{"query": "q", "must_not_say": ["x"]}',
            r'needs exactly one of .* or an "expected_hit_type" for an answer case',
        ),
    ],
)
def test_bad_answer_expectation_names_case_and_field(
    tmp_path: Path, entry: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_answer_cases(write(tmp_path / "g.json", f"[{entry}]"))


def test_a_file_of_answer_cases_only_is_no_retrieval_evaluation(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", '[{"query": "q", "expected_hit_type": "rag"}]')
    with pytest.raises(ConfigError, match=r"no entry expects sources .* `knowhub eval --answers`"):
        load_golden(path)
