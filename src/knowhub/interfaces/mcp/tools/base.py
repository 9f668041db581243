"""What every tool group shares: registration, and the one wrapper every call goes through.

A group is a class whose methods are the tools; the server
(:class:`~knowhub.interfaces.mcp.toolserver.ToolServer`) registers each through
:func:`wrapped` with the SDK's own ``add_tool``, which derives each input schema from the
method's signature (the wrapper keeps it), and offers each caller the tools it may call
(:attr:`Tool.refuses`). The wrapper is the ceremony of every call, so no tool repeats it:
it opens a data tool's call (:class:`Opening`: the caller's target; the collection its
``collection`` argument means, refused if the caller may not read it; the wait for the
served folder's first sync) and turns every failure into a tool error that says what went
wrong (:func:`tool_errors`), counted; the server keeps serving. A tool reads its opened
call with :func:`this_call`.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    contextmanager,
    nullcontext,
)
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeVar

import anyio.from_thread
import anyio.to_thread
from mcp import MCPError
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.checks import check_filters
from knowhub.collection import Collection
from knowhub.config import IngestSettings, ServerSettings
from knowhub.errors import KnowhubError
from knowhub.ingest.progress import Progress
from knowhub.interfaces.mcp.indexing import (
    Indexed,
    indexing_note,
    noting_indexing,
    wait_for_first_sync,
)
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.progress import Notifier, ProgressView

__all__ = [
    "READ",
    "WRITE",
    "Call",
    "CollectionName",
    "DataTools",
    "Opening",
    "Refusal",
    "Resolve",
    "Target",
    "Tool",
    "ToolGroup",
    "anyone",
    "filters_given",
    "in_thread",
    "inside_root",
    "progress_reporter",
    "this_call",
    "tool_errors",
    "tool_result",
    "wrapped",
    "writers",
]

log = logging.getLogger("knowhub.mcp")

T = TypeVar("T")

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Ingest adds or replaces documents but never deletes one; running it twice changes nothing.
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


Refusal = Callable[[Caller], str | None]
"""Why a caller may not call a tool (None: it may); it is then not offered the tool."""


def anyone(principal: Caller) -> None:
    """Every caller may call the tool."""


def writers(what: str) -> Refusal:
    """The refusal of a tool that changes the knowledge base (``what`` it does): a
    read-only caller may not call it."""

    return lambda principal: principal.write_refusal(what)


@dataclass(frozen=True)
class Tool:
    """One tool: the method that runs it, what ``tools/list`` shows besides its schema, and
    who may not call it.

    The SDK titles the input schema after the method (``<method>Arguments``): renaming a
    method changes ``tools/list``, and so the handshake cache's answer (early.py).
    """

    fn: Callable[..., Awaitable[CallToolResult]]
    name: str
    title: str
    description: str
    annotations: ToolAnnotations
    refuses: Refusal = anyone
    opening: Opening | None = None  # how a data tool's call is opened; None: a control tool


class ToolGroup(Protocol):
    def tools(self) -> Iterable[Tool]:
        """The group's tools, in the order ``tools/list`` shows them."""
        ...


@dataclass(frozen=True)
class Target:
    """What a data-tool call works on."""

    kb: KnowledgeBase
    principal: Caller
    root: Path  # ingest paths must resolve inside it
    label: str  # "local" or the session id, for logs

    @property
    def reader(self) -> App:
        """The served App as the caller may use it (``App.for_caller``): a collection it may
        not read is refused, listings and chunk look-ups leave those out, every read applies
        its data scope."""
        return self.kb.reader.for_caller(self.principal)

    def collection(self, name: str | None, *, writing: bool = False) -> str:
        """``name``, or the collection a call naming none uses, by the one rule of
        :mod:`knowhub.default_collection` (the served folder's; for a token limited to one
        collection, that one); either way one the caller may read. It may read the store:
        call it in a worker thread."""
        return self.reader.named(name, writing=writing)


CollectionName = Annotated[
    str | None,
    Field(
        description="Collection to use; default: the server's (its served folder's), or the "
        "only one this token may read."
    ),
]
"""Every tool's ``collection`` argument: None for :meth:`Target.collection`'s default."""


# Holds the target for the whole tool call (shared mode never unloads a session in use).
Resolve = Callable[[Context], AbstractAsyncContextManager[Target]]


@dataclass(frozen=True)
class Opening:
    """How :func:`wrapped` opens a data tool's call before the tool runs."""

    resolve: Resolve  # the call's target, held until the call ends
    # The tool's ``collection`` argument, resolved (a missing one by the default rule) and
    # refused if the caller may not read it: "read"; for an ingest's default: "write".
    collection: Literal["read", "write"] | None = None
    wait_s: float = 0.0  # waits up to this for the served folder's first sync
    notes_indexing: bool = True  # a failure says an ingest is running (not found: "yet")
    check: Callable[[Mapping[str, Any]], None] | None = None  # the arguments, before anything


@dataclass(frozen=True)
class Call:
    """A data tool's call as :func:`wrapped` opened it (:func:`this_call`)."""

    target: Target
    collection: str | None = None  # the collection the call is about (Opening.collection)

    @property
    def kb(self) -> KnowledgeBase:
        return self.target.kb

    @property
    def reader(self) -> App:
        return self.target.reader

    def handle(self) -> Collection:
        """The handle of :attr:`collection`, as the caller may use it."""
        return self.reader.collection(self.collection)


_CALL: ContextVar[Call] = ContextVar("knowhub_mcp_call")


def this_call() -> Call:
    """The data tool's call running in this task, opened by :func:`wrapped`."""
    return _CALL.get()


@dataclass(frozen=True)
class DataTools:
    """What a data-tool group is bound to: each call's target, the limits, the metrics."""

    resolve: Resolve
    settings: ServerSettings
    metrics: Metrics

    def opening(
        self,
        collection: Literal["read", "write"] | None = None,
        waits: bool = False,
        notes_indexing: bool = True,
        check: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> Opening:
        """How this group's tool is opened; ``waits``: for the first sync, as configured."""
        wait_s = self.settings.first_sync_wait_s if waits else 0.0
        return Opening(self.resolve, collection, wait_s, notes_indexing, check)


def wrapped(tool: Tool, metrics: Metrics) -> Callable[..., Awaitable[CallToolResult]]:
    """``tool.fn`` as the server registers it: the same signature (the SDK derives the
    input schema from it), its call opened (:class:`Opening`) and its failures turned into
    tool errors, counted in ``knowhub_tool_calls_total``."""

    if tool.opening is not None and "ctx" not in inspect.signature(tool.fn).parameters:
        raise TypeError(f"tool {tool.name!r} is opened from its call's context: give it `ctx`")

    @functools.wraps(tool.fn)
    async def call(**arguments: Any) -> CallToolResult:
        shown = {k: v for k, v in arguments.items() if not isinstance(v, Context)}
        with tool_errors(metrics, tool.name, shown):
            if tool.opening is None:
                return await tool.fn(**arguments)
            return await _opened(tool, tool.opening, arguments)

    return call


async def _opened(tool: Tool, opening: Opening, arguments: dict[str, Any]) -> CallToolResult:
    if opening.check is not None:
        opening.check(arguments)  # told at once, not after a wait for the first sync
    async with opening.resolve(arguments["ctx"]) as target:
        noting: AbstractContextManager[None] = (
            noting_indexing(target.kb) if opening.notes_indexing else nullcontext()
        )
        with noting:
            name = None
            if opening.collection is not None:
                wanted, writing = arguments.get("collection"), opening.collection == "write"
                name = await in_thread(lambda: target.collection(wanted, writing=writing))
            await wait_for_first_sync(target.kb, opening.wait_s, tool.name)
            token = _CALL.set(Call(target, name))
            try:
                return await tool.fn(**arguments)
            finally:
                _CALL.reset(token)


def filters_given(arguments: Mapping[str, Any]) -> None:
    """Check a call's ``filters`` (an :class:`Opening` check: a mistake is told at once,
    not after the wait for the first sync)."""
    check_filters(arguments.get("filters"))


async def in_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread: App calls block."""
    return await anyio.to_thread.run_sync(fn)


@contextmanager
def tool_errors(metrics: Metrics, tool: str, arguments: Mapping[str, object]) -> Iterator[None]:
    """Turn every failure inside the block into a tool error that says what went wrong.

    A :class:`KnowhubError` already names the value and the fix. Anything else (say a
    ``ValueError`` or an ``OSError`` from the file system) would reach the client as a bare
    "Error executing tool X", so it is named with the call's ``arguments`` and logged with
    its traceback.
    """
    try:
        yield
    except (ToolError, MCPError):
        metrics.tool_calls.labels(tool, "error").inc()
        raise
    except KnowhubError as exc:
        metrics.tool_calls.labels(tool, "error").inc()
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        metrics.tool_calls.labels(tool, "error").inc()
        log.error("tool %s failed unexpectedly", tool, exc_info=exc)
        given = ", ".join(f"{name}={_shorten(value)}" for name, value in arguments.items())
        raise ToolError(
            f"{tool}({given}) failed: {type(exc).__name__}: {_os_reason(exc)}; check these "
            "arguments, and if they are right, report this (the server log has the details)"
        ) from exc
    metrics.tool_calls.labels(tool, "ok").inc()


def tool_result(text: str, out: BaseModel, images: Sequence[ImageContent] = ()) -> CallToolResult:
    """Markdown (then any pictures) plus structured content; a data tool's opens with any
    indexing note."""
    if isinstance(out, Indexed) and out.indexing is not None:
        text = f"{indexing_note(out.indexing)}\n\n{text}"
    return CallToolResult(
        content=[TextContent(type="text", text=text), *images],
        structured_content=out.model_dump(mode="json"),
    )


def inside_root(root: Path, path: str) -> Path:
    """``path`` (relative, or absolute inside ``root``) resolved; refuse any escape."""
    if "\x00" in path:  # the OS cannot take it: os.stat would raise ValueError
        raise KnowhubError(f"path {path!r} contains a NUL character: give a plain path")
    candidate = Path(path)
    if ".." in candidate.parts:
        raise KnowhubError(f"path {path!r} contains '..': give a path inside the document root")
    base = root.resolve()
    try:
        full = (candidate if candidate.is_absolute() else base / candidate).resolve()
        full.stat()  # a symlink loop: RuntimeError from resolve() before 3.13, ELOOP after
    except FileNotFoundError:
        pass  # not there (yet): register creates it, ingest says it does not exist
    except (OSError, RuntimeError) as exc:
        raise KnowhubError(
            f"path {path!r} cannot be resolved ({_os_reason(exc)}): fix or remove the "
            "symlink on the way, or give another path"
        ) from exc
    if not full.is_relative_to(base):
        raise KnowhubError(
            f"path {path!r} resolves outside the document root {base} (absolute path or a "
            "symlink leading out): give a path inside it"
        )
    return full


def progress_reporter(ctx: Context, settings: IngestSettings) -> Progress:
    """An ingest progress callback (called from a worker thread) that notifies the client
    in chunks embedded, as the CLI shows them (:class:`~knowhub.interfaces.progress.Notifier`)."""

    def send(done: float, total: float | None, message: str) -> None:
        anyio.from_thread.run(ctx.report_progress, done, total, message)

    return Notifier(ProgressView("ingesting", settings.long_file_warning_s), send)


def _shorten(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _os_reason(exc: BaseException) -> str:
    """An OSError as 'its reason: its file'; anything else as its message."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)
