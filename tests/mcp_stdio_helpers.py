"""A small corpus and the calls the MCP stdio tests make: a real ``knowhub serve mcp``
process (local mode, ``--docs``) driven by the official SDK client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import stdio_client

from tests.helpers import write
from tests.mcp_helpers import eventually, stdio_params

CORPUS = {
    "backups.md": (
        "# Backups\n\n"
        "## Schedule\n\n"
        "The nightly backup job copies the PostgreSQL database to cold storage at 02:00 UTC.\n"
        "Database snapshots are kept in cold storage for ninety days, then deleted.\n\n"
        "## Restore drills\n\n"
        "Every quarter the on-call engineer restores last night's snapshot into a scratch\n"
        "cluster and compares the row counts of the ten largest tables with production.\n"
    ),
    "deploy.txt": (
        "Deployments\n\n"
        "Releases roll out with Kubernetes rolling updates. A canary receives five percent\n"
        "of the traffic for thirty minutes before the rest of the fleet is updated.\n"
        "A failed canary is rolled back with helm rollback.\n"
    ),
    "zh/年假.md": (
        "# 年假制度\n\n"
        "员工每年享有十五天带薪年假。年假需要提前两周向直属经理申请，"
        "未休完的年假可以顺延到下一年第一季度。\n"
    ),
    "ru/vpn.md": (
        "# Настройка VPN\n\n"
        "Чтобы подключиться к корпоративной сети из дома, установите клиент WireGuard\n"
        "и импортируйте конфигурационный файл из портала самообслуживания.\n"
        "Пароль от VPN меняется каждые девяносто дней.\n"
    ),
    "teams/ops/ops-runbook.md": (
        "# Ops escalation\n\n"
        "Escalation for operations: page the ops on-call through PagerDuty when the error\n"
        "budget burns faster than two percent an hour, then open an incident channel.\n"
    ),
    "teams/dev/dev-guide.md": (
        "# Dev escalation\n\n"
        "Escalation for developers: a failing main branch blocks merges; the author of the\n"
        "breaking commit reverts it first and investigates afterwards.\n"
    ),
    "teams/qa/qa-plan.md": (
        "# QA escalation\n\n"
        "Escalation for testers: a release candidate with a critical bug is rejected and\n"
        "the release manager is told in the release thread within the hour.\n"
    ),
}

QUESTIONS = [
    ("how long are database snapshots kept in cold storage", "backups.md"),
    ("what share of traffic does the canary receive", "deploy.txt"),
    ("员工每年有几天带薪年假", "zh/年假.md"),
    ("как подключиться к корпоративной сети через VPN", "ru/vpn.md"),
]


def make_corpus(tmp_path: Path, files: dict[str, str] = CORPUS) -> Path:
    """``tmp_path/docs`` filled with ``files``; returns ``tmp_path`` (data goes in data/)."""
    for name, text in files.items():
        write(tmp_path / "docs" / name, text)
    return tmp_path


@asynccontextmanager
async def serve(
    root: Path,
    *extra: str,
    stderr: str = "stderr.log",
    env: dict[str, str] | None = None,
    docs: str = "docs",
    **client: Any,
) -> AsyncIterator[Client]:
    """A stdio client of ``knowhub serve mcp --docs ROOT/DOCS EXTRA``; stderr to a file;
    ``client``: the SDK client's options (``mode``, ``message_handler``)."""
    params = stdio_params(
        "--data-dir",
        str(root / "data"),
        "serve",
        "mcp",
        "--docs",
        str(root / docs),
        *extra,
        cwd=root,
        env=env,
    )
    with (root / stderr).open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), **client) as connected:
            yield connected


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """The structured result of a call that must succeed."""
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, f"{tool}({args}) failed: {text}"
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    return structured


async def markdown(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert not result.is_error
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


async def fails(client: Client, tool: str, args: dict[str, Any], *expected: str) -> str:
    """Call ``tool``; it must be a tool error naming every ``expected`` piece, and the
    server must answer a normal call right after it."""
    result = await client.call_tool(tool, args)
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, f"{tool}({args}) should fail, got: {text}"
    for piece in expected:
        assert piece.lower() in text.lower(), f"{piece!r} not in the error: {text}"
    # pydantic's own noise, which teaches an agent nothing about the fix.
    assert "errors.pydantic.dev" not in text and "input_type=" not in text, text
    after = await call(client, "list_collections")
    assert [c["name"] for c in after["collections"]][:1] == ["default"]
    return text


async def documents(client: Client, collection: str = "default") -> int:
    out = await call(client, "list_collections")
    counts = {c["name"]: c["documents"] for c in out["collections"]}
    return int(counts.get(collection, 0))


async def indexed(client: Client, count: int) -> None:
    """Wait for the first sync: the default collection holds ``count`` documents."""

    async def ready() -> bool:
        return await documents(client) == count

    await eventually(ready)


async def search(client: Client, query: str, **args: Any) -> list[dict[str, Any]]:
    out = await call(client, "query_knowledge_hub", query=query, **args)
    hits: list[dict[str, Any]] = out["hits"]
    return hits


def async_true(check: Callable[[], object]) -> Callable[[], Awaitable[bool]]:
    """An async check for :func:`eventually` from a plain one."""

    async def wrapped() -> bool:
        return bool(check())

    return wrapped
