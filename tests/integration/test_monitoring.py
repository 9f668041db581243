"""The monitoring kit in deploy/: Prometheus rules checked and unit tested by the real
``promtool`` (Debian's prometheus package, installed by ``make test``), every alert with a
test, and every metric the rules and the Grafana dashboard use exported by the real servers'
``/metrics`` (``serve http`` and ``serve mcp --transport http``, each a child process)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
import yaml

from tests.helpers import WAIT_S
from tests.http_helpers import FULL, TOKEN_ENV, api_server, build_corpus
from tests.mcp_helpers import http_server

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "alerts.yml"
RULE_TESTS = DEPLOY / "prometheus" / "alerts_test.yml"
DASHBOARD = DEPLOY / "grafana" / "knowhub.json"
# A metric name in an expression; recording rules (knowhub:…) are not metrics of ours.
METRIC = re.compile(r"(?<![\w:])knowhub_[a-z0-9_]+")
RECORDED = re.compile(r"knowhub:[a-z0-9_:]+")
# A counter's TYPE line names its samples (``…_total``) already; a histogram's does not.
SAMPLE_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count")}


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool is missing: `make test` installs it (apt: prometheus)"
    return subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def _dashboard_exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def test_the_rules_are_valid() -> None:
    checked = _promtool("check", "rules", str(RULES), cwd=RULES.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in checked.stdout


def test_the_rules_unit_tests_pass() -> None:
    tested = _promtool("test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_every_alert_has_a_unit_test_that_fires_it() -> None:
    alerts = {rule["alert"] for rule in _rules() if "alert" in rule}
    cases = yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]
    fired = {
        case["alertname"]
        for test in cases
        for case in test["alert_rule_test"]
        if case.get("exp_alerts")
    }
    assert alerts, "no alert in alerts.yml"
    assert alerts - fired == set(), "alerts no test fires"


def test_the_dashboard_uses_only_recorded_rules_that_exist() -> None:
    records = {rule["record"] for rule in _rules() if "record" in rule}
    used = {name for expr in _dashboard_exprs() for name in RECORDED.findall(expr)}
    assert used <= records


def _exported(text: str) -> set[str]:
    """The sample names a ``/metrics`` page can hold, from its ``# TYPE`` lines."""
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names.update(name + suffix for suffix in SAMPLE_SUFFIXES.get(kind, ("",)))
    return names


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``/metrics`` of each server, over one small corpus."""
    root = tmp_path_factory.mktemp("monitoring")
    data = build_corpus(root)
    pages = {}
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as api:
        reply = api.get("/metrics", FULL)
        assert reply.status_code == 200, reply.text
        pages["http"] = reply.text
    with http_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as mcp:
        reply = httpx.get(mcp.url + "/metrics", headers=mcp.headers(), timeout=WAIT_S)
        assert reply.status_code == 200, reply.text
        pages["mcp"] = reply.text
    yield pages


def test_every_metric_the_rules_and_dashboard_use_is_exported(scraped: dict[str, str]) -> None:
    exported = _exported(scraped["http"]) | _exported(scraped["mcp"])
    exprs = [rule["expr"] for rule in _rules()] + _dashboard_exprs()
    used = {name for expr in exprs for name in METRIC.findall(expr)}
    assert len(used) >= 15, used  # the expressions were read
    assert used - exported == set(), "used but exported by neither server"


def test_both_servers_export_what_the_alerts_need(scraped: dict[str, str]) -> None:
    for page in scraped.values():
        assert re.search(r'^knowhub_index_active_version\{collection="default"\} 1\.0$', page, re.M)
        free = re.search(r"^knowhub_data_volume_free_bytes (\S+)$", page, re.M)
        size = re.search(r"^knowhub_data_volume_size_bytes (\S+)$", page, re.M)
        assert free and size, page
        assert 0 < float(free.group(1)) <= float(size.group(1))
        assert "# TYPE knowhub_ingest_failures_total counter" in page
