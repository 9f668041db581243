"""The pure parts of ``knowhub bench load``: where it may point, how it judges answers,
its percentiles, and reading a process's figures from /proc."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowhub.errors import ConfigError
from knowhub.interfaces.cli import cli
from knowhub.interfaces.loadtest.checks import check_answer, check_mcp_search, check_stream
from knowhub.interfaces.loadtest.probes import Outcome
from knowhub.interfaces.loadtest.procstat import ProcSampler, pid_listening_on
from knowhub.interfaces.loadtest.report import percentile, summary
from knowhub.interfaces.loadtest.target import loopback_url, websocket_url

SOURCE = {"n": 1, "source": "ops.md", "text": "Backups run every 6 hours [1]."}
END = {
    "answer": "Backups run every 6 hours [1].",
    "hit_type": "rag",
    "model": "extractive",
    "sources": [SOURCE],
    "citations": {"cited": [1]},
    "timings_ms": {"retrieval": 2.5},
}


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5:8000",
        "http://192.168.1.2",
        "http://example.com:8000",
        "http://localhost.example.com",
        "http://[2001:db8::1]:8000",
        "http://0.0.0.0:8000",
    ],
)
def test_non_loopback_url_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="only drives servers on loopback"):
        loopback_url(url, "--url")


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8000/", "http://127.8.9.10:1", "http://localhost:80", "http://[::1]:8"],
)
def test_loopback_url_is_accepted_without_its_trailing_slash(url: str) -> None:
    assert loopback_url(url, "--url") == url.rstrip("/")


def test_url_that_is_not_http_or_carries_credentials_is_refused() -> None:
    with pytest.raises(ConfigError, match="not an http:// URL"):
        loopback_url("ftp://127.0.0.1/", "--mcp-url")
    with pytest.raises(ConfigError, match="--token-env"):
        loopback_url("http://user:secret@127.0.0.1:8000", "--url")


def test_websocket_url_follows_the_scheme() -> None:
    assert websocket_url("http://127.0.0.1:8000", "/api/stream") == "ws://127.0.0.1:8000/api/stream"
    assert websocket_url("https://localhost", "/api/stream") == "wss://localhost/api/stream"


def test_bench_load_refuses_a_non_loopback_url_before_sending_anything(tmp_path: Path) -> None:
    out = tmp_path / "report"
    args = [
        "--data-dir",
        str(tmp_path / "data"),
        "bench",
        "load",
        "--url",
        "http://203.0.113.7:8000",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "--url 'http://203.0.113.7:8000' is not on this machine" in result.output
    assert not out.exists()


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def test_whole_stream_passes_and_names_its_sources() -> None:
    events = [
        ("stage", {"stage": "retrieval"}),
        ("sources", {"sources": [SOURCE]}),
        ("token", {"text": "Backups run every 6 hours [1]."}),
        ("end", END),
    ]
    checked = check_stream(events)
    assert checked.problems == []
    assert checked.sources == {"ops.md"}
    assert checked.stages == {"retrieval": 2.5}


def test_stream_whose_tokens_do_not_add_up_to_the_answer_is_torn() -> None:
    events = [("sources", {"sources": [SOURCE]}), ("token", {"text": "Backups run"}), ("end", END)]
    assert any("do not add up" in p for p in check_stream(events).problems)


def test_stream_without_one_final_end_or_with_an_error_is_torn() -> None:
    assert check_stream([("sources", {}), ("token", {"text": "x"})]).problems
    assert check_stream([("sources", {}), ("end", END), ("end", END)]).problems
    errored = check_stream([("error", {"error": "boom", "status": 502})]).problems
    assert errored and "boom" in errored[0]


def test_extractive_answer_citing_a_source_it_does_not_list_is_torn() -> None:
    assert check_answer(END).problems == []
    wrong = {**END, "citations": {"cited": [1, 3]}}
    assert any("cites [1, 3]" in p for p in check_answer(wrong).problems)
    untimed = {k: v for k, v in END.items() if k != "timings_ms"}
    assert "no 'timings_ms'" in check_answer(untimed).problems


def test_mcp_hits_must_be_numbered_and_carry_their_spans() -> None:
    hit = {
        "n": 1,
        "chunk_id": "c",
        "source": "ops.md",
        "text": "t",
        "line_start": 1,
        "line_end": 2,
        "source_hash": "ab",
    }
    good = {"hits": [hit], "timings_ms": {"lexical": 1.0}}
    assert check_mcp_search(good).problems == []
    assert check_mcp_search({"hits": [{**hit, "n": 2}], "timings_ms": {}}).problems
    assert check_mcp_search({"hits": [{**hit, "line_end": None}], "timings_ms": {}}).problems


def test_process_listening_on_a_port_is_found_from_proc() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert pid_listening_on(sock.getsockname()[1]) == os.getpid()


def test_port_nobody_listens_on_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening
        with pytest.raises(ConfigError, match="no process listens on port"):
            pid_listening_on(sock.getsockname()[1])


def test_sampler_reads_this_process_rss_and_cpu() -> None:
    own = _own_rss_bytes()
    sampler = ProcSampler(os.getpid())
    first = sampler.sample()
    sum(i * i for i in range(200_000))  # some CPU time between the two readings
    second = sampler.sample()
    # The tree's RSS holds this process's own (VmRSS); what else a test worker holds varies
    # (ONNX sessions of earlier tests: 4.7 GB seen), so no absolute ceiling but a unit
    # error's (pages or KiB read as bytes would be off by 1,000x and more).
    assert 0.9 * own <= first.rss_bytes < max(own, 2**30) * 64
    assert first.cpu_pct == 0.0 and second.cpu_pct >= 0.0
    assert second.at_s >= first.at_s


def _own_rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_summary_counts_outcomes_and_finds_the_longest_stall() -> None:
    outcomes = [
        Outcome("search", 0.0, 500.0),  # finishes at 0.5 s
        Outcome("search", 0.4, 200.0, kind="timeout", error="no answer"),  # at 0.6 s
        Outcome("ask", 3.0, 100.0, kind="torn", error="tokens"),  # at 3.1 s: 2.5 s of nothing
    ]
    total = summary({"search": outcomes[:2], "ask": outcomes[2:]}, wall_s=4.0)
    assert (total["requests"], total["ok"], total["timeouts"], total["torn"]) == (3, 1, 1, 1)
    assert total["success_rate"] == round(1 / 3, 5) and total["throughput_rps"] == 0.25
    assert total["longest_stall_s"] == 2.5
    assert total["timeline"] == [{"s": 0, "ok": 1, "failed": 1}, {"s": 3, "ok": 0, "failed": 1}]
