"""The console's sources page (tokens that may write): the websites and repositories of
``sources:`` with when each was last refreshed, a button to refresh them, and a form to add
one (a URL or git spec) to a collection.

Not a document's source (that is :mod:`.source`). A refresh or an add runs in the
background (:mod:`.source_runs`) through the caller's own handle
(``Collection.ingest_source``), so a read-only, data-scoped or collection-limited token is
refused by the same door as everywhere; the form is answered at once (303 back to the
page, which reloads itself while a run is under way). A source in a collection the caller
may not read is neither listed nor refreshed: to it, it does not exist. Every POST must come
from a page of this server (``check_same_origin``), as the other forms'.
"""

from __future__ import annotations

from typing import Annotated, Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response

from knowhub.caller import Caller
from knowhub.config.sources import KINDS, SourceEntry
from knowhub.errors import KnowhubError, QueryError
from knowhub.ingest.gitspec import parse_git_spec
from knowhub.ingest.remote import fetched_text, remote_source
from knowhub.ingest.report import IngestReport
from knowhub.ingest.sources import RemoteSource, SourceNote
from knowhub.interfaces.http.console.auth import check_same_origin, read_form
from knowhub.interfaces.http.console.failure import NotFoundError, error_page, on_failure
from knowhub.interfaces.http.console.pages import names_of, pages_router
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.console.source_runs import SourceRuns, when
from knowhub.interfaces.http.deps import ServiceDep, writer
from knowhub.interfaces.http.service import Service
from knowhub.interfaces.render import render_report
from knowhub.interfaces.sources import RefreshLog, sync_source

__all__ = ["add", "refresh", "router", "runs_of", "sources_page"]

router = pages_router()
_Writer = Annotated[Caller, writer("ingest websites and repositories")]
_FAILED_SHOWN = 5  # failed documents named in a run's outcome; the rest are counted


def runs_of(connection: HTTPConnection) -> SourceRuns:
    """The source runs of the app serving ``connection`` (``create_app`` puts them there)."""
    runs: SourceRuns = connection.app.state.source_runs
    return runs


@router.get("/sources")
async def sources_page(request: Request, service: ServiceDep, principal: _Writer) -> Response:
    return page(request, "sources.html", **await _shown(request, service, principal, {}))


@router.post("/sources/refresh")
async def refresh(request: Request, service: ServiceDep, principal: _Writer) -> Response:
    """Refresh one source (``name``) or every one the caller sees (no name)."""
    form = await _posted(request)
    entries = _visible(service, principal)
    name = form.get("name", "").strip()
    if name:
        entries = [e for e in entries if e.name == name]
        if not entries:
            raise NotFoundError(f"name: no source named {name!r} in sources: (see /ui/sources)")
    app = service.app_for(principal)
    runs = runs_of(request)
    for entry in entries:

        def work(note: SourceNote, entry: SourceEntry = entry) -> str:
            run = sync_source(app, entry, note)
            if run.report is None:
                raise QueryError(run.error)
            return _summary(service, run.report)

        shown = _shown_spec(entry.spec)
        runs.start(entry.name, shown, _collection_of(service, entry), work, principal)
    return RedirectResponse("/ui/sources", status_code=303)


@router.post("/sources/add")
async def add(request: Request, service: ServiceDep, principal: _Writer) -> Response:
    """Start ingesting the website or repository the form names into its collection."""
    form = await _posted(request)

    async def form_again(exc: Exception) -> Response:
        shown = await _shown(request, service, principal, form)
        return error_page(request, exc, "sources.html", **shown)

    on_failure(request, form_again)
    typed = form.get("new_collection", "").strip() or form.get("collection", "").strip()
    name = service.collection(principal, typed or None, writing=True)
    spec = form.get("spec", "").strip()
    source = await service.run(lambda: _source(service, spec, _options(form)))
    principal.check_reach(source.spec, source.local_reach)  # said now, not in the run
    handle = await service.run(lambda: service.app_for(principal).collection(name))

    def work(note: SourceNote) -> str:
        return _summary(service, handle.ingest_source(source, note=note))

    shown = _shown_spec(spec)
    runs_of(request).start(f"{name}:{shown}", shown, name, work, principal)
    return RedirectResponse("/ui/sources", status_code=303)


async def _posted(request: Request) -> dict[str, str]:
    """The form of a POST from a page of this server (another site's is refused)."""
    check_same_origin(request)
    return await read_form(request)


def _source(service: Service, spec: str, options: dict[str, Any]) -> RemoteSource:
    """The source ``spec`` names, or a 400 naming the field and the fix; a website's host
    is resolved and checked against the web policy now, so the form says so at once (the
    crawl checks every address again, redirects too)."""
    if not spec:
        raise _field("spec", "type a website's URL (https://…) or a git repository (git+https://…)")
    web = spec.lower().startswith(("http://", "https://"))
    if options and not web:
        raise _field(
            next(iter(options)), "a website's option: a repository takes none; leave it empty"
        )
    try:
        source = remote_source(spec, service.settings, options)
        if source is not None and web:
            from knowhub.ingest.web.policy import checked_addresses, web_target

            allowed = service.settings.ingest.web.allow_private_networks
            checked_addresses(web_target(spec), allowed)
    except KnowhubError as exc:
        raise _field("spec", str(exc)) from exc
    if source is None:
        raise _field(
            "spec",
            f"{spec!r} is not a website or repository: type an http(s):// URL, or a git "
            "repository as git+https://…, git+ssh://…, git+file://… or git@host:path",
        )
    return source


def _options(form: dict[str, str]) -> dict[str, Any]:
    """A website's ``depth`` and ``max_pages``, when typed (a repository takes neither)."""
    options: dict[str, Any] = {}
    for key, least in (("depth", 0), ("max_pages", 1)):
        text = form.get(key, "").strip()
        if not text:
            continue
        if not text.isdigit() or int(text) < least:
            raise _field(key, f"{text!r} is not a whole number of at least {least}")
        options[key] = int(text)
    return options


def _field(name: str, message: str) -> QueryError:
    """A 400 whose message starts with the form field at fault."""
    return QueryError(f"{name}: {message}")


def _summary(service: Service, report: IngestReport) -> str:
    """A run's outcome: what the fetch did and the report's line, failed documents named."""
    service.metrics.ingest.record(report)  # counted in /metrics, as every ingest
    lines = [fetched_text(report.fetched), render_report(report).splitlines()[0]]
    lines += [f"failed {source}: {why}" for source, why in report.failed[:_FAILED_SHOWN]]
    if len(report.failed) > _FAILED_SHOWN:
        lines.append(f"… and {len(report.failed) - _FAILED_SHOWN} more failed")
    return "\n".join(lines)


def _visible(service: Service, principal: Caller) -> list[SourceEntry]:
    """The ``sources:`` entries of the collections ``principal`` may read."""
    entries = list(service.settings.sources)
    return principal.readable(entries, lambda e: _collection_of(service, e))


def _collection_of(service: Service, entry: SourceEntry) -> str:
    return entry.collection or service.settings.collection


def _shown_spec(spec: str) -> str:
    """``spec`` as the page shows it: a repository without its credentials."""
    try:
        parsed = parse_git_spec(spec)
    except KnowhubError:
        parsed = None
    return spec if parsed is None else parsed.shown


async def _shown(
    request: Request, service: Service, principal: Caller, form: dict[str, str]
) -> dict[str, Any]:
    """What the page shows: the sources, their runs, and the add form (``form``: as typed)."""

    def gather() -> dict[str, Any]:
        refreshed = RefreshLog(service.settings.data_dir).read()
        entries = [_row(service, e, refreshed.get(e.name)) for e in _visible(service, principal)]
        return {
            "names": names_of(service.app_for(principal)),
            "default": service.default_name(principal),
            "entries": entries,
        }

    # The runs first: one shown ended has marked its refresh time before the log is read.
    runs = runs_of(request).visible(principal)
    shown = await service.run(gather)
    configured = {e["name"] for e in shown["entries"]}
    added = [run for key, run in runs.items() if key not in configured]
    under_way = any(not run["finished"] for run in runs.values())
    return {**shown, "runs": runs, "added": added, "form": form, "under_way": under_way}


def _row(service: Service, entry: SourceEntry, refreshed: float | None) -> dict[str, Any]:
    return {
        "name": entry.name,
        "kind": KINDS[entry.kind],
        "spec": _shown_spec(entry.spec),
        "collection": _collection_of(service, entry),
        "refresh": entry.refresh if entry.refresh_s > 0 else "manual (knowhub sync)",
        "refreshed": when(refreshed) or "never",
    }
