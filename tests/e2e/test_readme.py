"""Every command the README and its docs/ pages show runs, on a temporary data dir."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from knowhub.config import Settings
from tests.helpers import ROOT, cli_env
from tests.minilm_export import export_minilm

README = (ROOT / "README.md").read_text(encoding="utf-8")
# The reference pages (measurements and decisions are records, not instructions to run).
PAGES = [
    p
    for p in sorted((ROOT / "docs").glob("*.md"))
    if p.name not in {"benchmarks.md", "decisions.md"}
]
# The README's tour first: the pages go on from its ingest and its search's chunk id.
SHOWN = "\n".join([README, *(p.read_text(encoding="utf-8") for p in PAGES)])


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SHOWN, flags=re.DOTALL)


def test_readme_opens_with_the_two_commands() -> None:
    first = re.search(r"```\w*\n(.*?)```", README, flags=re.DOTALL)
    assert first is not None
    commands = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    assert commands[:2] == ["make demo", "make test"]


def test_ci_calls_make_test_and_the_image_test_and_nothing_else() -> None:
    lines = (ROOT / ".ci/run").read_text().splitlines()
    commands = [ln for ln in lines if ln.strip() and not ln.startswith(("#", "set ", "cd "))]
    assert commands == ["make test", "make image-test"]


def test_makefile_has_both_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, flags=re.MULTILINE)
    assert re.search(r"^test:", makefile, flags=re.MULTILINE)


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_of_the_map_and_its_pages_resolves() -> None:
    for page in [ROOT / "README.md", *PAGES]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), f"{page.name}: {target}"
            assert not anchor or anchor in _anchors(linked), f"{page.name}: {target}"


def test_every_module_the_readme_names_exists() -> None:
    named = re.findall(r"`(src/knowhub/[^`]*)`", README)
    assert named, "the README lost its map"
    assert [p for p in named if not (ROOT / p).exists()] == []


def test_yaml_snippets_are_valid_settings() -> None:
    for block in blocks("yaml"):
        Settings.model_validate(yaml.safe_load(block))


@pytest.mark.slow  # every command is a process: minutes on a busy machine
def test_every_console_command_runs(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "examples" / "golden.json", tmp_path / "golden.json")
    shutil.copy(ROOT / "examples" / "faq.csv", tmp_path / "faq.csv")
    shutil.copy(ROOT / "examples" / "golden-answers.json", tmp_path / "golden-answers.json")
    export_minilm(tmp_path / "minilm")  # docs/embedders.md checks it: `models check minilm/`
    env = cli_env({"KNOWHUB_DATA_DIR": str(tmp_path / "data")})
    chunk_id = ""
    commands = [ln[2:] for b in blocks("console") for ln in b.splitlines() if ln.startswith("$ ")]
    # Those naming a website run against a local one: tests/e2e/test_docs_web.py.
    commands = [command for command in commands if "://" not in command]
    assert len(commands) >= 8
    for command in commands:
        args = shlex.split(command.replace("CHUNK_ID", chunk_id))
        assert args[0] == "knowhub"
        result = subprocess.run(
            [sys.executable, "-m", "knowhub", *args[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        if "--json" in args and args[1] == "search":
            hits = json.loads(result.stdout)
            assert hits, f"{command} found nothing"
            chunk_id = hits[0]["chunk_id"]
    assert chunk_id, "no search --json command to take a chunk id from"
    # The tour tags at its start and docs/cli.md prunes without --tag: the tag stays.
    tagged = subprocess.run(
        [
            sys.executable,
            "-m",
            "knowhub",
            "search",
            "backups",
            "-c",
            "handbook",
            "--filter",
            "team=ops",
            "--json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tagged.returncode == 0 and json.loads(tagged.stdout), tagged.stderr
