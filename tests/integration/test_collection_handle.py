"""`app.collection(name, version)`: one version of one collection, bound to how it was built."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.answer.events import End, Sources, Stage, Token
from knowhub.answer.pipeline import collect
from knowhub.errors import CollectionNotFound, ConfigError, QueryError, StoreError
from knowhub.interfaces.wire import wire
from knowhub.versions.build import build_version
from knowhub.versions.switch import activate_version
from tests.helpers import fast_settings, write


def _docs(root: Path) -> Path:
    for topic in ("backups", "deployments"):
        paragraphs = [
            f"Paragraph {i}: the {topic} runbook says step {i} is checked by the on-call "
            f"engineer and logged in the {topic} journal every week."
            for i in range(6)
        ]
        write(root / "docs" / f"{topic}.md", f"# {topic.title()}\n\n" + "\n\n".join(paragraphs))
    return root / "docs"


def test_a_handle_reads_and_writes_its_own_version(app: App, tmp_path: Path) -> None:
    app.collection("kb").ingest([_docs(tmp_path)])
    build_version(app, "kb", chunk_size=200)
    first, second = app.collection("kb"), app.collection("kb", 2)
    assert (first.target.number, second.target.physical) == (1, "kb@v2")
    assert second.settings.chunking.size == 200 and first.settings.chunking.size != 200
    hits = second.search("backups runbook step", top_k=5).hits
    assert hits and {h.collection for h in hits} == {"kb"}
    v2_ids = {c.chunk_id for r in second.documents() for c in second.document_chunks(r)}
    assert {h.chunk_id for h in hits} <= v2_ids
    assert second.chunk(hits[0].chunk_id)[0].chunk_id == hits[0].chunk_id
    assert first.chunk(hits[0].chunk_id) == [], "a chunk of version 2 is not in version 1"


def test_a_handle_keeps_its_version_and_a_new_one_follows_activation(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_docs(tmp_path)])
    build_version(app, "kb", chunk_size=200)
    held = app.collection("kb")
    assert held.target.number == 1  # resolved on first use
    activate_version(app, "kb", 2)
    assert held.target.number == 1, "a request in flight finishes on its version"
    assert app.collection("kb").target.number == 2


def test_an_unknown_collection_is_one_error_every_interface_maps_to_not_found(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_docs(tmp_path)])
    with pytest.raises(CollectionNotFound, match=r"unknown collection 'nope' \(known: kb\)"):
        app.collection("nope").documents()
    assert issubclass(CollectionNotFound, QueryError) and issubclass(CollectionNotFound, StoreError)


def test_an_answer_streams_typed_events(app: App, tmp_path: Path) -> None:
    app.collection("kb").ingest([_docs(tmp_path)])
    events = list(app.collection("kb").ask("What does the backups runbook say about step 2?"))
    assert isinstance(events[0], Stage) and events[0].name == "routing"
    assert any(isinstance(e, Sources) for e in events)
    assert any(isinstance(e, Token) and e.text for e in events)
    end = events[-1]
    assert isinstance(end, End) and end.answer.hit_type in {"rag", "insufficient_context"}
    assert end.to_dict()["route"]["intent"] == "search"
    assert "routing" in end.to_dict()["timings_ms"]


def test_a_greeting_an_faq_answer_and_a_bad_question_never_load_the_model(
    tmp_path: Path,
) -> None:
    app = build_app(fast_settings(tmp_path / "data", **{"llm.provider": "openai"}))
    with pytest.raises(ConfigError, match=r"llm\.base_url"):
        _ = app.llm  # the model is misconfigured: building it fails
    app.collection("kb").ingest([_docs(tmp_path)])
    faq = write(tmp_path / "faq.csv", "question,answer\nWho checks the backups?,The on-call.\n")
    app.collection("kb").faq_import([faq])
    assert collect(app.collection("kb").ask("hello"))["hit_type"] == "chat"
    assert collect(app.collection("kb").ask("Who checks the backups?"))["hit_type"] == "faq_direct"
    with pytest.raises(QueryError, match="is empty"):
        collect(app.collection("kb").ask("   "))


def test_closing_the_wire_closes_the_answer_and_writes_its_trace(app: App, tmp_path: Path) -> None:
    app.collection("kb").ingest([_docs(tmp_path)])
    answer = app.collection("kb").ask("What does the backups runbook say about step 2?")
    events = wire(answer)
    assert next(events)[0] == "stage"
    events.close()  # a client gone mid-answer; `answer` is still referenced here
    last = list(app.traces())[-1]
    assert last.kind == "answer" and "the caller stopped reading before the end" in last.notes
