"""LLM transforms at ingest, through the scripted chat server over real HTTP: enrichment is
searchable, filterable, shown and cached; refinement is indexed while citations keep the
page's own text; a bad answer costs a warning, never the file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, ConfigError, build_app
from knowhub.ingest.progress import IngestProgress
from knowhub.interfaces.render import render_hits
from knowhub.testing import llm_server
from knowhub.testing.llm_server import LlmServer
from tests.helpers import WAIT_S, fast_settings, write

PARKING = "Visitors leave their cars in the north lot, free of charge."
CAFETERIA = "The cafeteria serves lunch from noon until two."


def _enrichment(text: str) -> str:
    """The scripted model's JSON: keywords only the model knows ("zeppelin")."""
    parking = "north lot" in text
    return json.dumps(
        {
            "title": "Visitor parking" if parking else "Lunch hours",
            "summary": "Where visitors park." if parking else "When lunch is served.",
            "keywords": ["parking", "zeppelin"] if parking else ["lunch", "canteen"],
            "question": "Where do visitors park?" if parking else "When is lunch?",
        }
    )


def _app(tmp_path: Path, server: LlmServer, **values: object) -> App:
    settings = {
        "llm.provider": "openai",
        "llm.base_url": server.openai_base,
        "llm.model": "scripted",
        "llm.max_retries": 0,
        "llm.timeout_s": WAIT_S,
        "ingest.transforms.enrich": True,
        **values,
    }
    return build_app(fast_settings(tmp_path / "data", **settings))


def _docs(root: Path) -> Path:
    write(root / "parking.txt", PARKING + "\n")
    write(root / "cafeteria.txt", CAFETERIA + "\n")
    return root


@pytest.fixture
def server() -> Iterator[LlmServer]:
    with llm_server.serve(_enrichment) as running:
        yield running


def test_enrichment_is_searched_filtered_shown_and_asked_once(
    tmp_path: Path, server: LlmServer
) -> None:
    app = _app(tmp_path, server)
    steps: list[IngestProgress] = []
    report = app.collection().ingest([_docs(tmp_path / "docs")], progress=steps.append)
    assert report.ok and not report.warnings
    asked = [r.body["messages"][-1]["content"] for r in server.requests]
    assert sorted(asked) == sorted([PARKING, CAFETERIA])
    assert all(r.body["response_format"] == {"type": "json_object"} for r in server.requests)
    assert [s.source for s in steps if s.event == "transformed"] == ["cafeteria.txt", "parking.txt"]

    hit = app.collection().search("zeppelin").hits[0]  # a word only the enrichment holds
    assert hit.source == "parking.txt" and hit.text == PARKING
    assert hit.enrichment == {
        "title": "Visitor parking",
        "summary": "Where visitors park.",
        "keywords": ["parking", "zeppelin"],
        "question": "Where do visitors park?",
    }
    assert "» Visitor parking: Where visitors park. [keywords: parking, zeppelin]" in render_hits(
        [hit]
    )
    canteen = app.collection().search("where to eat", filters={"keywords": "canteen"}).hits
    assert [h.source for h in canteen] == ["cafeteria.txt"]
    either = (
        app.collection().search("information", filters={"keywords": ("canteen", "parking")}).hits
    )
    assert sorted(h.source for h in either) == ["cafeteria.txt", "parking.txt"]

    # The same texts again, in another collection and in another file: no call.
    app.collection("copy").ingest([tmp_path / "docs"])
    write(tmp_path / "docs/parking-copy.txt", PARKING + "\n")
    assert app.collection().ingest([tmp_path / "docs"]).added == ["parking-copy.txt"]
    assert len(server.requests) == 2
    assert (
        app.collection()
        .search("zeppelin", filters={"source": "parking-copy.txt"})
        .hits[0]
        .enrichment
    )
    app.close()


def test_a_garbage_answer_or_a_failing_provider_leaves_chunks_plain_with_a_warning(
    tmp_path: Path,
) -> None:
    def answer(text: str) -> str:
        return "Sure! Here is the summary you asked for." if "north" in text else _enrichment(text)

    with llm_server.serve(answer) as server:
        app = _app(tmp_path, server)
        report = app.collection().ingest([_docs(tmp_path / "docs")])
        assert report.ok and sorted(report.added) == ["cafeteria.txt", "parking.txt"]
        [(source, warning)] = report.warnings
        assert source == "parking.txt" and "1 of 1 chunks not transformed" in warning
        assert app.collection().search("north lot").hits[0].enrichment is None
        assert app.collection().search("canteen").hits[0].source == "cafeteria.txt"
        app.close()
    with llm_server.serve(_enrichment, fail="500") as failing:  # its first answer fails
        app = _app(tmp_path / "second", failing)
        report = app.collection().ingest([tmp_path / "docs"])
        [(source, warning)] = report.warnings
        assert report.ok and source == "cafeteria.txt" and "answered HTTP 500" in warning
        assert app.collection().search("zeppelin").hits[0].source == "parking.txt"
        app.close()


def test_a_provider_that_is_down_is_given_up_after_three_failures_in_a_row(
    tmp_path: Path,
) -> None:
    for number in range(6):
        write(tmp_path / "docs" / f"note{number}.txt", f"Note {number} on the north lot.\n")
    with llm_server.serve(_enrichment, fail="500", times=None) as down:
        app = _app(tmp_path, down)
        try:
            report = app.collection().ingest([tmp_path / "docs"])
        finally:
            app.close()
        assert report.ok and len(report.added) == 6 and len(report.warnings) == 6
        assert len(down.requests) == 3
        assert "failed 3 times in a row" in report.warnings[-1][1]


def test_refined_text_is_indexed_while_the_chunk_keeps_its_own(tmp_path: Path) -> None:
    scanned = "Tbe cafeterla serves lunoh from noon."

    def refine(text: str) -> str:
        return text.replace("Tbe cafeterla", "The cafeteria").replace("lunoh", "lunch")

    with llm_server.serve(refine) as server:
        app = _app(
            tmp_path,
            server,
            **{"ingest.transforms.enrich": False, "ingest.transforms.refine": True},
        )
        write(tmp_path / "docs/scan.txt", scanned + "\n")
        assert app.collection().ingest([tmp_path / "docs"]).ok
        hit = app.collection().search("lunch cafeteria").hits[0]
        assert hit.text == scanned
        assert hit.metadata["llm"] == {"refined": "The cafeteria serves lunch from noon."}
        assert server.requests[0].body["messages"][-1]["content"] == scanned
        app.close()


def test_a_transform_on_without_an_llm_names_the_setting(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data", **{"ingest.transforms.enrich": True})
    app = build_app(settings)
    with pytest.raises(ConfigError, match=r"ingest.transforms.enrich is on, but llm.provider"):
        app.collection().ingest([_docs(tmp_path / "docs")])
    app.close()
