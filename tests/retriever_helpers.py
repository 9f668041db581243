"""A ``knowhub serve http`` over a handbook and a private collection, for the retrievers of
``knowhub.integrations`` (tests/integration/test_*_retriever.py, the docs' examples)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.helpers import knowhub, write
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


@contextmanager
def handbook_server(root: Path) -> Iterator[ApiServer]:
    """The server over :func:`build_handbook`'s data, answering the full token."""
    data = build_handbook(root)
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        yield server


def api_hits(server: ApiServer, **body: Any) -> list[dict[str, Any]]:
    """``/api/search``'s own hits for ``body``, as a client of the API gets them."""
    reply = server.post("/api/search", json=body)
    assert reply.status_code == 200, reply.text
    hits: list[dict[str, Any]] = reply.json()["hits"]
    assert hits, f"/api/search found nothing for {body}"
    return hits
