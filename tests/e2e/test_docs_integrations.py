"""docs/integrations.md's LangChain and LlamaIndex examples run as shown, against a real
``knowhub serve http`` and its data dir, with every connection off the machine refused: the
frameworks download nothing (NLTK data, tiktoken encodings) that their wheels do not hold."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT, WAIT_S, cli_env, write
from tests.http_helpers import ApiServer
from tests.retriever_helpers import handbook_served

PAGE = (ROOT / "docs/integrations.md").read_text(encoding="utf-8")
SHOWN_URL = "http://127.0.0.1:8000"
# Runs an example with an audit hook that refuses (and reports) every name look-up and
# connection beyond this machine: what would download is caught however it tries.
OFFLINE = """
import runpy, sys
LOCAL = {"127.0.0.1", "::1", "localhost", None}
def refuse(event, args):
    if event == "socket.getaddrinfo" and args[0] not in LOCAL:
        host = args[0]
    elif event == "socket.connect" and isinstance(args[1], tuple) and args[1][0] not in LOCAL:
        host = args[1][0]
    else:
        return
    sys.stderr.write(f"NETWORK: {event} {host}\\n")
    raise OSError(f"no network in this test: {host}")
sys.addaudithook(refuse)
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def section(title: str) -> str:
    found = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", PAGE, flags=re.DOTALL | re.MULTILINE)
    assert found, f"docs/integrations.md has no section {title!r}"
    return found.group(1)


def examples(title: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", section(title), flags=re.DOTALL)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docs-integrations")


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[ApiServer]:
    with handbook_served(root) as running:
        yield running.server


def run_offline(
    code: str, server: ApiServer, root: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as the doc shows it, against ``server`` and its data dir, no network."""
    script = write(root / "example.py", code.replace(SHOWN_URL, server.url))
    dead = "http://127.0.0.1:9"  # and a proxy that does not answer, for clients that use one
    environment = cli_env(
        {
            "KNOWHUB_TOKEN": server.token or "",
            "KNOWHUB_DATA_DIR": str(root / "data"),
            "HTTP_PROXY": dead,
            "HTTPS_PROXY": dead,
            "NO_PROXY": "127.0.0.1,localhost",
            **env,
        }
    )
    for name in ("NLTK_DATA", "TIKTOKEN_CACHE_DIR"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", OFFLINE, str(script)],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )


def ran(code: str, server: ApiServer, root: Path) -> str:
    done = run_offline(code, server, root)
    assert done.returncode == 0 and "NETWORK" not in done.stderr, done.stderr
    return done.stdout


def test_the_langchain_examples_run_offline(server: ApiServer, root: Path) -> None:
    over_http, chain, in_process = examples("LangChain")
    assert ran(over_http, server, root).splitlines()[0] == (
        "ops.md, § Operations > Backups, lines 1-6 | They are kept for 35 days."
    )
    context = ran(chain, server, root)
    assert context.startswith("[1] ops.md, § Operations > Backups, lines 1-6\n# Operations")
    assert "\n\n[2] " in context
    assert ran(in_process, server, root) == "ops.md, § Operations > Backups, lines 1-6\n"


def test_the_llamaindex_examples_run_offline(server: ApiServer, root: Path) -> None:
    over_http, in_process = examples("LlamaIndex")
    out = ran(over_http, server, root)
    assert re.match(r"1\.0 ops\.md, § Operations > Backups, lines 1-6\n", out), out
    # The query engine's answer is MockLLM's echo of its prompt: the passages, cited.
    assert "citation: ops.md, § Operations > Backups, lines 1-6" in out
    assert "Query: how long are backups kept?" in out
    assert out.splitlines()[-1].startswith("['ops.md, § Operations > Backups, lines 1-6', ")
    assert ran(in_process, server, root) == "hr.md, § HR > Leave, lines 1-6\n"


def test_the_offline_check_catches_a_download(server: ApiServer, root: Path) -> None:
    """What the docs say of TIKTOKEN_CACHE_DIR, and proof the audit hook sees a download."""
    over_http = examples("LlamaIndex")[0]
    empty = root / "tiktoken-empty"
    empty.mkdir(exist_ok=True)
    done = run_offline(over_http, server, root, TIKTOKEN_CACHE_DIR=str(empty))
    assert done.returncode != 0
    # Refused by the dead proxy (requests uses one) or, without, by the audit hook.
    assert "openaipublic.blob.core.windows.net" in done.stderr, done.stderr
    assert "tiktoken" in done.stderr


def test_the_extras_the_page_installs_hold_the_frameworks() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    shown = re.findall(r"pip install 'knowhub\[(\w+)\]'", PAGE)
    assert shown == ["langchain", "llamaindex"]
    assert [r.split(">")[0] for r in extras["langchain"]] == ["langchain-core"]
    assert [r.split(">")[0] for r in extras["llamaindex"]] == ["llama-index-core"]
    for requirement in extras["langchain"] + extras["llamaindex"]:
        assert requirement in extras["dev"], f"{requirement} is not in dev: untested"
