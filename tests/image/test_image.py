"""The container image, built from the Dockerfile and run: its servers answer from outside.

Run by ``make image-test`` (after ``make test`` in CI), not by ``make test``: the first
build takes minutes (tests/image/buildah.py).
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.helpers import free_port
from tests.image.buildah import (
    IMAGE,
    Mount,
    buildah,
    container,
    owned_by_image_user,
    run_argv,
    started,
)
from tests.mcp_helpers import HttpServer, eventually, text_of, wait_ready

TOKEN = "image-test-token-7f3a"
FACT = "The espresso machine on floor 7 is descaled every Tuesday by the facilities team."
QUESTION = "When is the espresso machine descaled?"
# A token from a secret file, as an orchestrator mounts one.
TOKEN_ENV = {
    "KNOWHUB_SERVER__TOKENS": '[{"name": "ops", "token_env": "KH_TOKEN"}]',
    "KH_TOKEN_FILE": "/run/secrets/kh_token",
    # One embedding worker: this is a 2-core machine running the build's caches too.
    "KNOWHUB_EMBEDDER__WORKERS": "1",
}
# A first start converts the embedder's weights and loads them (no cache in a fresh /data).
START_S = 240.0


@pytest.fixture
def mounts(tmp_path: Path, image_built: float) -> list[Mount]:
    """docs (read-only, readable by the image's user), an empty /data it owns, the secret."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "facilities.md").write_text(f"# Facilities\n\n## Kitchen\n\n{FACT}\n")
    (docs / "other.md").write_text("# Travel\n\nBook trains two weeks ahead.\n")
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "kh_token").write_text(TOKEN + "\n")
    for path in (tmp_path, docs, secrets, *docs.iterdir(), *secrets.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    data = owned_by_image_user(tmp_path / "data")
    return [
        Mount(docs, "/docs", read_only=True),
        Mount(data, "/data"),
        Mount(secrets, "/run/secrets", read_only=True),
    ]


@pytest.fixture
def box(request: pytest.FixtureRequest) -> Iterator[str]:
    with container(f"knowhub-test-{request.node.name[:40]}") as name:
        yield name


def test_the_image_runs_as_its_user_with_a_healthcheck_and_no_build_tools(
    image_built: float, box: str
) -> None:
    config = json.loads(buildah("inspect", "--type", "image", IMAGE))["Docker"]["config"]
    assert config["User"] == "knowhub"
    assert config["Entrypoint"] == ["knowhub"]
    assert "/health" in " ".join(config["Healthcheck"]["Test"])
    assert set(config["Volumes"]) == {"/data"}
    assert set(config["ExposedPorts"]) == {"8000/tcp", "8080/tcp"}
    probe = (
        "import shutil, pathlib, sys; "
        "tools = [t for t in ('gcc', 'cc', 'g++', 'make') if shutil.which(t)]; "
        "left = [p for p in ('/src', '/root/.cache', '/data/.cache') if pathlib.Path(p).exists()]; "
        "print(tools, left, sys.prefix)"
    )
    done = subprocess.run(
        run_argv(box, ["python3", "-c", probe], [], user="root"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "[]", "/opt/knowhub"]


def test_serve_mcp_over_http_answers_an_mcp_call_from_outside(
    mounts: list[Mount], box: str, tmp_path: Path
) -> None:
    # The default port, the one the image exposes and its HEALTHCHECK asks (8000 first:
    # nothing may answer there, or the probe below would pass without this server).
    port, _ = _free(8080), _free(8000)
    argv = ["knowhub", "serve", "mcp", "--transport", "http", "--host", "0.0.0.0"]
    argv += ["--docs", "/docs"]
    with started(run_argv(box, argv, mounts, TOKEN_ENV), tmp_path / "mcp.log") as process:
        server = HttpServer(f"http://127.0.0.1:{port}", process, tmp_path / "mcp.log", TOKEN)
        wait_ready(server.url, process, server.log, START_S)
        assert server.get("/health").status_code == 200
        assert server.post("/mcp", token="wrong", json={}).status_code == 401
        assert FACT in anyio.run(_search_until_indexed, server)
        # The image's own HEALTHCHECK, run inside beside the server, finds it healthy.
        healthcheck = json.loads(buildah("inspect", "--type", "image", IMAGE))["Docker"]["config"][
            "Healthcheck"
        ]["Test"]
        assert healthcheck[0] == "CMD"
        probe = subprocess.run(run_argv(box, healthcheck[1:], []), timeout=60, check=False)
        assert probe.returncode == 0


def test_an_ingest_then_serve_http_answers_a_search_from_outside(
    mounts: list[Mount], box: str, tmp_path: Path
) -> None:
    ingest = subprocess.run(
        run_argv(box, ["knowhub", "ingest", "/docs"], mounts, TOKEN_ENV),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ingest.returncode == 0, ingest.stderr
    assert "collection default: 2 added" in ingest.stdout, ingest.stdout + ingest.stderr
    port = _free(8000)
    argv = ["knowhub", "serve", "http", "--host", "0.0.0.0"]
    with started(run_argv(box, argv, mounts, TOKEN_ENV), tmp_path / "http.log") as process:
        server = HttpServer(f"http://127.0.0.1:{port}", process, tmp_path / "http.log", TOKEN)
        wait_ready(server.url, process, server.log, START_S)
        refused = server.post("/api/search", token="wrong", json={"query": QUESTION})
        assert refused.status_code == 401
        answer = server.post("/api/search", json={"query": QUESTION, "top_k": 1})
        assert answer.status_code == 200, answer.text
        (hit,) = answer.json()["hits"]
        assert FACT in hit["text"] and hit["source"].endswith("facilities.md")
    # The index lives on the host's volume, owned by the image's user.
    data = mounts[1].host
    assert any(p.suffix == ".sqlite3" and p.stat().st_uid == 10001 for p in data.rglob("*"))


def test_a_public_bind_with_no_token_is_refused(mounts: list[Mount], box: str) -> None:
    argv = ["knowhub", "serve", "http", "--host", "0.0.0.0", "--port", str(free_port())]
    done = subprocess.run(run_argv(box, argv, mounts), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "exposes the server beyond this machine with no token" in done.stderr


def _free(port: int) -> int:
    """``port``, checked free: the container shares this machine's network."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise AssertionError(f"port {port} is taken on this machine: stop what listens there")
    return port


async def _search_until_indexed(server: HttpServer) -> str:
    """The search tool's text once the first sync of /docs has indexed the fact."""
    async with server.client() as client:

        async def found() -> str:
            text = text_of(await client.call_tool("query_knowledge_hub", {"query": QUESTION}))
            return text if FACT in text else ""

        found_text: str = await eventually(found, timeout=START_S, interval=1.0)
        return found_text
