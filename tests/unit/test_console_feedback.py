"""The console's feedback store: the newest vote per trace and person, bounded on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowhub.errors import QueryError
from knowhub.interfaces.http.console.ask import linked
from knowhub.interfaces.http.console.feedback import MAX_COMMENT, FeedbackStore, feedback_store


def test_a_vote_is_kept_with_its_trace_and_a_second_vote_replaces_the_first(
    tmp_path: Path,
) -> None:
    store = feedback_store(tmp_path)
    store.add("t1", True, "", "alice")
    store.add("t2", False, "missed the backup window", "alice")
    store.add("t1", False, "  actually wrong  ", "alice")
    store.add("t1", True, "", "bob")
    votes = store.for_trace("t1")
    assert [(f.by, f.helpful, f.comment) for f in votes] == [
        ("alice", False, "actually wrong"),
        ("bob", True, ""),
    ]
    assert [f.comment for f in store.for_trace("t2")] == ["missed the backup window"]
    lines = (tmp_path / "feedback" / "feedback.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["trace_id"] == "t1" and len(lines) == 4


def test_comments_are_cut_and_a_torn_line_does_not_lose_the_others(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path)
    store.add("t1", False, "я" * (MAX_COMMENT + 50), "alice")
    with store.path.open("a", encoding="utf-8") as out:
        out.write('{"trace_id": "t2", "helpf\n')
    store.add("t3", True, "好", "bob")
    assert len(store.for_trace("t1")[0].comment) == MAX_COMMENT
    assert [f.trace_id for f in store.latest()] == ["t1", "t3"]


def test_the_file_stays_bounded_keeping_the_newest(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path, max_bytes=4000)
    for n in range(200):
        store.add(f"trace-{n}", n % 2 == 0, "comment " * 5, "alice")
    assert store.path.stat().st_size <= 4000
    kept = [f.trace_id for f in store.latest()]
    assert kept[-1] == "trace-199" and "trace-0" not in kept
    assert kept == sorted(kept, key=lambda t: int(t.split("-")[1]))


def test_a_trace_id_must_be_given(tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="trace id"):
        feedback_store(tmp_path).add("", True, "", "alice")


def test_citations_become_links_only_where_a_source_has_that_number() -> None:
    sources = [{"n": 1, "chunk_id": "c-one"}, {"n": 2, "chunk_id": "c-two"}]
    assert linked("Backups run every 6 hours [1][2]. See [7].", sources) == [
        ("Backups run every 6 hours ", None),
        ("[1]", "c-one"),
        ("[2]", "c-two"),
        (". See [7].", None),
    ]
