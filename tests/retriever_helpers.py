"""A ``knowhub serve http`` over a handbook and a private collection, for the retrievers of
``knowhub.integrations`` (tests/integration/test_*_retriever.py, the docs' examples)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knowhub import App, build_app
from tests.helpers import fast_settings, finishes, knowhub, write
from tests.http_helpers import ApiServer, api_server

FULL = "retr-full-Hq3mZ8wL1cV6nB0x"
HANDBOOK_ONLY = "retr-handbook-Tr5kP2sY9gD4jF7a"
TOKEN_ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps(
        [
            {"name": "full", "token_env": "KH_RETR_FULL"},
            {"name": "handbook", "token_env": "KH_RETR_HANDBOOK", "collections": ["handbook"]},
        ]
    ),
    "KH_RETR_FULL": FULL,
    "KH_RETR_HANDBOOK": HANDBOOK_ONLY,
}
OPS = (
    "# Operations\n\n## Backups\n\nDatabase backups run every 6 hours.\nThey are kept for 35 "
    "days.\n\n## Access\n\nUse the VPN for the console.\n"
)
HR = (
    "# HR\n\n## Leave\n\nEmployees get 28 days of annual leave.\nBackups of leave records "
    "are kept by HR.\n"
)
MINUTES = "# Board minutes\n\nThe orchid merger closes in spring; nobody outside the board knows.\n"


def build_handbook(root: Path) -> Path:
    """``handbook`` (ops.md tagged team=ops, hr.md team=hr) and ``private`` (minutes.md),
    ingested by the CLI as a user would; the data dir."""
    data = root / "data"
    for folder, name, text, args in (
        ("ops", "ops.md", OPS, ["--collection", "handbook", "--tag", "team=ops"]),
        ("hr", "hr.md", HR, ["--collection", "handbook", "--tag", "team=hr"]),
        ("board", "minutes.md", MINUTES, ["--collection", "private"]),
    ):
        write(root / folder / name, text)
        done = knowhub("--data-dir", str(data), "ingest", folder, *args, cwd=root)
        assert done.returncode == 0, done.stderr
    return data


@dataclass
class Served:
    """A server over :func:`build_handbook`'s data (answering the full token) and an App
    over the same data dir, in this process."""

    root: Path
    server: ApiServer
    app: App

    def retriever(self, cls: Any, way: str, **options: Any) -> Any:
        """A retriever of ``cls`` (either framework's) over the handbook: ``way`` "http"
        asks the server with the full token, "app" the App."""
        if way == "http":
            return cls.from_url(self.server.url, token=self.server.token, **options)
        return cls.from_app(self.app, **options)


@contextmanager
def handbook_served(root: Path) -> Iterator[Served]:
    data = build_handbook(root)
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        app = build_app(fast_settings(data))
        try:
            yield Served(root, server, app)
        finally:
            app.close()


def api_hits(server: ApiServer, **body: Any) -> list[dict[str, Any]]:
    """``/api/search``'s own hits for ``body``, as a client of the API gets them."""
    reply = server.post("/api/search", json=body)
    assert reply.status_code == 200, reply.text
    hits: list[dict[str, Any]] = reply.json()["hits"]
    assert hits, f"/api/search found nothing for {body}"
    return hits


def served_fixture(name: str) -> Callable[[pytest.TempPathFactory], Iterator[Served]]:
    """A module's ``served`` fixture: ``served = served_fixture("langchain")``."""

    @pytest.fixture(scope="module")
    def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
        with handbook_served(tmp_path_factory.mktemp(name)) as running:
            yield running

    return served


def import_without(framework: str, module: str) -> str:
    """What importing ``module`` says where the package ``framework`` is not installed."""
    done = finishes(f"import sys; sys.modules[{framework!r}] = None\nimport {module}")
    assert done.returncode != 0, done.stdout
    return done.stderr
