"""Knowledge-base versions on a real SQLite store: build beside the active one, switch, drop."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from knowhub import App, QueryError, StoreError, build_app
from knowhub.ingest.bundle import bundle_collection
from knowhub.ingest.progress import IngestProgress
from knowhub.interfaces.wire import wire
from knowhub.versions.build import build_version
from knowhub.versions.gate import gate_check
from knowhub.versions.liveness import read_claim
from knowhub.versions.switch import activate_version, drop_version, list_versions, rollback_version
from tests.helpers import fast_settings, write

TOPICS = ("backups", "deployments", "incidents")


def _corpus(root: Path) -> Path:
    """Three documents of several paragraphs: 800-character chunks and 200 differ."""
    for topic in TOPICS:
        paragraphs = [
            f"Paragraph {i} on {topic}: the {topic} runbook says step {i} is checked twice, "
            f"logged in the {topic} journal and reviewed by the on-call engineer each week."
            for i in range(8)
        ]
        write(root / "docs" / f"{topic}.md", f"# {topic.title()}\n\n" + "\n\n".join(paragraphs))
    return root / "docs"


def _chunk_ids(app: App, store_name: str) -> set[str]:
    cid = app.store.collection_id(store_name)
    assert cid is not None, store_name
    return {hit.chunk_id for hit in app.store.hits(list(app.store.chunk_sources(cid))).values()}


def _found(app: App, query: str = "backups runbook step") -> set[str]:
    hits = app.collection("kb").search(query, top_k=10).hits
    assert hits and all(h.collection == "kb" for h in hits)
    return {h.chunk_id for h in hits}


def test_a_new_chunk_size_answers_only_once_activated_and_rollback_returns(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)], tags={"team": "ops"})
    report = build_version(app, "kb", chunk_size=200)
    assert (report.version.number, report.version.state, report.base) == (2, "ready", 1)
    assert sorted(report.added) == ["backups.md", "deployments.md", "incidents.md"]
    assert report.version.chunk_size == 200 and not report.missing and report.ok
    v1, v2 = _chunk_ids(app, "kb"), _chunk_ids(app, "kb@v2")
    assert len(v2) > len(v1) and not v1 & v2

    assert _found(app) <= v1, "a built version answers nothing until activated"
    assert activate_version(app, "kb", 2) == 1
    assert _found(app) <= v2
    assert app.collection("kb").search("backups").hits[0].metadata["team"] == "ops", (
        "tags were kept"
    )
    [view] = app.collections()
    assert (view.name, view.active_version, view.versions, view.chunks) == ("kb", 2, 2, len(v2))
    assert {r.collection for r in app.collection("kb").documents()} == {"kb"}
    some = next(iter(v2))
    assert [h.collection for h in app.chunk(some)] == ["kb"]

    assert rollback_version(app, "kb") == (1, 2)
    assert _found(app) <= v1
    assert rollback_version(app, "kb") == (2, 1), "rolling back twice returns"
    assert activate_version(app, "kb", 2) == 2, "activating the active one changes nothing"


def test_a_version_built_with_another_embedder_is_queried_and_ingested_with_it(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    app = build_app(fast_settings(data))  # hashing-256
    app.collection("kb").ingest([_corpus(tmp_path)])
    other = build_app(fast_settings(data, **{"embedder.hashing.dim": 64}))
    report = build_version(other, "kb")
    assert (report.version.embedder_id, report.version.dim) == ("hashing-64", 64)
    assert app.store.embedder_of(app.store.collection_id("kb@v2") or 0) == ("hashing-64", 64)

    activate_version(app, "kb", 2)  # `app` is configured with hashing-256 ...
    assert _found(app) <= _chunk_ids(app, "kb@v2")  # ... and queries v2 with hashing-64
    write(tmp_path / "more" / "new.md", "# Audits\n\nAudits happen every quarter.\n")
    assert app.collection("kb").ingest([tmp_path / "more"]).added == ["new.md"]
    assert app.collection("kb").search("audits quarter").hits[0].source == "new.md"
    assert app.verify("kb").ok

    # Version 1 was built before anyone pinned it, with hashing-256; `other` is configured
    # with hashing-64, so it cannot write to it or query it: a clear error naming both.
    assert rollback_version(other, "kb") == (1, 2)
    with pytest.raises(StoreError) as refused:
        other.collection("kb").ingest([tmp_path / "more"])
    assert "hashing-256" in str(refused.value) and "hashing-64" in str(refused.value)
    with pytest.raises(QueryError, match=r"hashing-256.*hashing-64"):
        other.collection("kb").search("audits")
    app.close()
    other.close()


def test_the_first_build_pins_version_one_to_the_embedder_that_built_it(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)])
    build_version(app, "kb", chunk_size=300)
    [first, second] = list_versions(app, "kb")
    assert first.version.embedder == {"provider": "hashing", "hashing": {"dim": 256}}
    assert (first.active, second.active, first.documents) == (True, False, 3)
    other = build_app(fast_settings(app.settings.data_dir, **{"embedder.hashing.dim": 64}))
    assert _found(other) <= _chunk_ids(app, "kb"), "a pinned version ignores the config"
    other.close()


def test_queries_during_switches_never_fail_and_each_reads_one_version(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)])
    build_version(app, "kb", chunk_size=200)
    versions = [_chunk_ids(app, "kb"), _chunk_ids(app, "kb@v2")]
    server = build_app(fast_settings(app.settings.data_dir))  # another process's view
    stop, started = threading.Event(), threading.Barrier(4)
    failures: list[BaseException] = []
    mixed: list[set[str]] = []
    seen: set[int] = set()
    runs = [0, 0, 0]

    def read(slot: int) -> None:
        started.wait()
        queries = ["backups runbook", "deployments journal", "incidents on-call"]
        while not stop.is_set():
            try:
                if slot == 2:
                    asked = wire(server.collection("kb").ask(queries[runs[slot] % 3]))
                    end = [p for k, p in asked if k == "end"]
                    ids = {s["chunk_id"] for s in end[0]["sources"]}
                else:
                    ids = {
                        h.chunk_id
                        for h in server.collection("kb").search(queries[runs[slot] % 3]).hits
                    }
            except BaseException as exc:  # any failure fails the test, below
                failures.append(exc)
                return
            read_from = [n for n, chunk_ids in enumerate(versions) if ids and ids <= chunk_ids]
            if not read_from:
                mixed.append(ids)
            seen.update(read_from)
            runs[slot] += 1

    readers = [threading.Thread(target=read, args=(slot,)) for slot in range(3)]
    for reader in readers:
        reader.start()
    started.wait()
    number = 2
    while min(runs) < 30 and not failures:  # switch for as long as the readers read
        activate_version(app, "kb", number)
        number = 3 - number
    stop.set()
    for reader in readers:
        reader.join()
    server.close()
    assert not failures, failures
    assert not mixed, f"results mixing versions (or empty): {mixed[:3]}"
    assert seen == {0, 1}, "the readers saw both versions"


def test_drop_refuses_the_active_version_and_deletes_another_whole(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)])
    build_version(app, "kb", chunk_size=200)
    with pytest.raises(QueryError, match="version 1 is the active version of 'kb'"):
        drop_version(app, "kb", 1)
    with pytest.raises(QueryError, match=r"no version 7 \(known: 1, 2\)"):
        drop_version(app, "kb", 7)
    activate_version(app, "kb", 2)
    first = app.store.collection_id("kb")
    assert first is not None
    for key in (f"calibration:{first}", f"fusion:{first}"):  # measured for version 1
        app.store.set_meta(key, "{}", None)
    assert drop_version(app, "kb", 1).number == 1
    assert app.store.collection_id("kb") is None
    assert app.store.get_meta(f"calibration:{first}") is None, "its measurements go with it"
    assert app.store.get_meta(f"fusion:{first}") is None
    assert [(c.name, c.active_version, c.versions) for c in app.collections()] == [("kb", 2, 1)]
    assert _found(app) <= _chunk_ids(app, "kb@v2")
    with pytest.raises(QueryError, match="no previously active version"):
        rollback_version(app, "kb")
    assert build_version(app, "kb").version.number == 3, "numbers are never reused"
    assert [r.version.number for r in list_versions(app)] == [2, 3]


def test_traces_record_the_version_each_run_read(app: App, tmp_path: Path) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)])
    build_version(app, "kb", chunk_size=200)
    app.collection("kb").search("backups")
    activate_version(app, "kb", 2)
    app.collection("kb").search("backups")
    *_, build_ingest, before, after = list(app.traces())
    assert build_ingest.kind == "ingest" and build_ingest.kb_version is not None
    assert build_ingest.kb_version["physical"] == "kb@v2"
    assert before.kb_version is not None and after.kb_version is not None
    assert (before.kb_version["version"], before.kb_version["physical"]) == (1, "kb")
    revision = app.store.version(app.store.collection_id("kb@v2") or 0)
    assert after.kb_version == {
        "collection": "kb",
        "version": 2,
        "physical": "kb@v2",
        "revision": revision,
    }
    assert after.collection == "kb"


def test_a_build_skips_files_that_are_gone_and_brings_the_faq(app: App, tmp_path: Path) -> None:
    docs = _corpus(tmp_path)
    app.collection("kb").ingest([docs])
    faq = write(tmp_path / "faq.csv", "question,answer\nWho reviews backups?,The on-call.\n")
    app.collection("kb").faq_import([faq])
    (docs / "incidents.md").unlink()
    report = build_version(app, "kb", chunk_size=200, activate=True)
    assert report.missing == ["incidents.md"] and report.faq == 1 and report.activated
    assert sorted(r.source for r in app.collection("kb").documents()) == [
        "backups.md",
        "deployments.md",
    ]
    [end] = [p for k, p in wire(app.collection("kb").ask("Who reviews backups?")) if k == "end"]
    assert end["hit_type"] == "faq_direct"


def test_a_build_stopped_by_ctrl_c_is_interrupted_at_once_and_resumes(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)])

    def ctrl_c(step: IngestProgress) -> None:
        if step.event == "file_done":  # one document built, the rest to come
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_version(app, "kb", chunk_size=200, progress=ctrl_c)
    # This process is still alive: the build is interrupted all the same, not building
    # (nor failed: `activate --force` would then be offered for a version half built).
    assert [r.state for r in list_versions(app, "kb")] == ["ready", "interrupted"]
    report = build_version(app, "kb", resume=2)
    assert report.version.state == "ready" and len(report.added) == len(TOPICS)


def test_a_build_whose_claim_another_build_took_over_stops_and_leaves_the_version_to_it(
    app: App, tmp_path: Path
) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)])
    thief = json.dumps({"host": "h", "machine": "m", "pid": 1, "started": "1", "heartbeat": 0})

    def taken_over(step: IngestProgress) -> None:
        if step.event == "file_done" and read_claim(app.store, "kb", 2) != thief:
            # Another host judged this build dead and resumed it: this one must stop once
            # its heartbeat finds out (its thread ends), not go on writing beside it.
            while not app.store.set_meta(
                "version-build:kb:2", thief, read_claim(app.store, "kb", 2)
            ):
                pass  # a heartbeat landed in between
            [beat] = [t for t in threading.enumerate() if t.name == "version-build"]
            beat.join(60)

    with pytest.raises(StoreError, match=r"version 2 of 'kb' was taken over by process 1 on h"):
        build_version(app, "kb", chunk_size=200, progress=taken_over)
    [version] = [r for r in list_versions(app, "kb") if r.version.number == 2]
    assert version.version.state == "building"  # the other build's to finish: not failed
    assert read_claim(app.store, "kb", 2) == thief


def test_export_of_a_version_imports_under_the_collection_name(app: App, tmp_path: Path) -> None:
    app.collection("kb").ingest([_corpus(tmp_path)])
    build_version(app, "kb", chunk_size=200, activate=True)
    stats = app.collection("kb").export(tmp_path / "kb.jsonl")
    assert (stats.collection, stats.chunks) == ("kb", len(_chunk_ids(app, "kb@v2")))
    elsewhere = build_app(fast_settings(tmp_path / "elsewhere"))
    bundle = tmp_path / "kb.jsonl"
    assert elsewhere.collection(bundle_collection(bundle)).import_bundle(bundle).collection == "kb"
    assert _found(elsewhere) == _found(app)
    elsewhere.close()


def test_a_gate_still_judges_when_the_active_version_cannot_be_searched(tmp_path: Path) -> None:
    data = tmp_path / "data"
    app = build_app(fast_settings(data))  # hashing-256
    app.collection("kb").ingest([_corpus(tmp_path)])
    golden = write(
        tmp_path / "golden.json",
        json.dumps([{"query": f"{t} runbook", "expected_sources": [f"{t}.md"]} for t in TOPICS]),
    )
    gates = {"kb": {"hit_rate@10": 1.0}}
    other = build_app(fast_settings(data, **{"embedder.hashing.dim": 64, "eval.gates": gates}))
    report = build_version(other, "kb", gate=gate_check(other, "kb", golden))
    assert report.gate is not None and report.gate.result.passed
    assert report.gate.metrics["hit_rate@10"] == 1.0 and report.gate.compared_metrics == {}
    assert "hashing-256" in (report.gate.compared_error or "")
    app.close()
    other.close()
