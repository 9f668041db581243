"""Cold start: what a fresh process imports before it answers (issue 15).

A search and an MCP client's ``tools/list`` come before any ingest, web server or model
is needed; every module they import is start-up time of each CLI call and of each
server an MCP client launches. Timings are benchmarks/cold_start.py's; these tests check
the cause, the modules loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import cli_env, knowhub, write

# Model runtimes, loaders' parsers, jieba's dictionary and the HTTP servers' stacks.
# (uvicorn and starlette are not listed for MCP: the MCP SDK itself imports them.)
HEAVY = {
    "onnxruntime",
    "onnx",
    "tokenizers",
    "jieba",
    "pypdfium2",
    "docx",
    "pptx",
    "openpyxl",
    "bs4",
    "fastapi",
    "knowhub.ingest.pipeline",
    "knowhub.ingest.loaders",
}
NOT_FOR_SEARCH = HEAVY | {"uvicorn", "starlette", "httpx", "mcp", "knowhub.interfaces.http"}


def _imported(stderr: str) -> set[str]:
    """Module names from ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_search_loads_neither_ingest_nor_an_http_stack(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "backups.md", "# Backups\n\nSnapshots are kept ninety days.\n")
    assert knowhub("--data-dir", "data", "ingest", "docs", cwd=tmp_path).returncode == 0

    done = knowhub(
        "--data-dir",
        "data",
        "search",
        "how long are snapshots kept",
        cwd=tmp_path,
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert "backups.md" in done.stdout
    assert _imported(done.stderr) & NOT_FOR_SEARCH == set()


# What `knowhub serve mcp` (stdio) runs before it reads its first request: the CLI, then
# build_local; the warm-up (models, tokenizers, indexes) runs in a thread of its own.
_TOOLS_LIST = """
import json, sys
from pathlib import Path
import anyio
import knowhub.interfaces.cli.serve
from knowhub.config import load_settings
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.server import ServeOptions, build_local
settings = load_settings(overrides={"data_dir": sys.argv[1]})
server, service = build_local(settings, ServeOptions(docs=Path(sys.argv[2])), Metrics())
tools = anyio.run(server.list_tools)
print(json.dumps({"tools": [t.name for t in tools], "modules": sorted(sys.modules)}))
"""


def test_mcp_tools_list_loads_no_model_loader_or_tokenizer(tmp_path: Path) -> None:
    docs = write(tmp_path / "docs" / "a.md", "# A\n\nText.\n").parent
    done = subprocess.run(
        [sys.executable, "-c", _TOOLS_LIST, str(tmp_path / "data"), str(docs)],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert "query_knowledge_hub" in out["tools"]
    assert set(out["modules"]) & HEAVY == set()
