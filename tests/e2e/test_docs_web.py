"""The website examples of the README and docs/ run, against a real nginx on 127.0.0.1 in
place of their placeholder site (test_readme.py runs the other commands)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from tests.e2e.test_readme import SHOWN, blocks
from tests.helpers import WAIT_S, cli_env
from tests.web_site import nginx_site

PLACEHOLDER = "https://docs.example.org/guide/"


def _commands() -> list[str]:
    lines = [ln[2:] for b in blocks("console") for ln in b.splitlines() if ln.startswith("$ ")]
    return [line for line in lines if PLACEHOLDER in line or line.startswith("knowhub sync")]


def _config(url: str) -> str:
    """The docs' sources: example, pointed at the local site (loopback allowed)."""
    [shown] = [b for b in blocks("yaml") if "sources:" in b and PLACEHOLDER in b]
    settings = yaml.safe_load(shown.replace(PLACEHOLDER, url))
    settings["ingest"] = {"web": {"allow_private_networks": ["127.0.0.0/8"]}}
    return yaml.safe_dump(settings)


def test_the_docs_website_commands_run(tmp_path: Path) -> None:
    commands = _commands()
    assert any(c.startswith("knowhub ingest https://") for c in commands), "none shown"
    assert any(c.startswith("knowhub sync") for c in commands)
    assert PLACEHOLDER in SHOWN
    with nginx_site(tmp_path, traps=False) as site:
        url = site.url("docs/tutorial/")
        (tmp_path / "knowhub.yaml").write_text(_config(url), encoding="utf-8")
        env = cli_env({"KNOWHUB_DATA_DIR": str(tmp_path / "data")})
        outputs, progress = [], []
        for command in commands:
            args = shlex.split(command.replace(PLACEHOLDER, url))
            result = subprocess.run(
                [sys.executable, "-m", "knowhub", *args[1:]],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=WAIT_S,
            )
            assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
            outputs.append(result.stdout)
            progress.append(result.stderr)
    synced = json.loads(outputs[-1])  # the last: knowhub sync --collection guide --json
    assert [run["name"] for run in synced] == ["guide"]
    assert synced[0]["report"]["embedded"] == 0  # the pages were all there, unchanged
    assert re.search(r"pages: \d+ fetched", progress[0])  # a crawl says what it fetched
    assert re.search(r"pages: .*\d+ not modified", "\n".join(outputs))  # the syncs' reports
