"""The console's versions page: a collection's builds (``knowhub versions``), which one
answers, and for tokens that may write, switching to another or rolling back.

A switch takes two steps. The first post shows what the switch would do with the gate's
verdict on the version it makes active — the collection's golden questions saved from traces
(``DATA_DIR/golden.json``) measured on that version next to the active one, against
``eval.gates`` — measured there and then, untraced and recorded nowhere; the second
(``confirm=yes``) switches, atomically, as ``knowhub versions activate`` does (a rollback is
the switch to the previously active version). A version whose state is not ready (its gate
failed at build) needs ``force=yes``, as ``--force`` does.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from knowhub.caller import Caller
from knowhub.errors import AuthError, ConfigError, KnowhubError, QueryError
from knowhub.interfaces.http.console.auth import check_same_origin, read_form
from knowhub.interfaces.http.console.pages import gathered, names_of, pages_router
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.console.traces import golden_path
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep, writer
from knowhub.interfaces.http.service import Service
from knowhub.versions.gate import compare_versions, gate_check
from knowhub.versions.record import READY, read_versions, resolve_target
from knowhub.versions.switch import activate_version, list_versions

__all__ = ["router", "switch", "versions"]

router = pages_router()


@router.get("/versions")
async def versions(
    request: Request,
    service: ServiceDep,
    principal: PrincipalDep,
    collection: str | None = None,
    now: int | None = None,
    was: int | None = None,
) -> Response:
    """The versions; ``now``/``was`` (where a switch redirects to) say what it did."""
    _whole_collections(principal)
    name = service.collection(principal, collection)
    message = None
    if now is not None and was is not None:
        message = f"Version {now} of {name} " + (
            "was already active." if now == was else f"is active (was {was})."
        )

    def gather(principal: Caller) -> dict[str, Any]:
        return {
            "names": names_of(service.app_for(principal)),
            "collection": name,
            "rows": list_versions(service.app, name),
            "message": message,
        }

    return await gathered(request, service, principal, "versions.html", gather)


@router.post("/versions/switch")
async def switch(
    request: Request, service: ServiceDep, principal: Annotated[Caller, writer("switch versions")]
) -> Response:
    """Make ``version`` active: shown with its gate result first, done once ``confirm=yes``
    (then redirected to the list, so a reload posts nothing again). A rollback is the same
    switch, to the previously active version (the confirmation words it so)."""
    check_same_origin(request)
    _whole_collections(principal)
    form = await read_form(request)
    name = service.collection(principal, form.get("collection") or None)
    number = _number(form.get("version", ""))
    if form.get("confirm") != "yes":
        check = await service.run(lambda: _check(service, principal, name, number))
        return page(request, "confirm_switch.html", **check)
    # Activating the version shown, not "whatever is previous now": a double submit or a
    # switch someone made meanwhile cannot turn this into another one.
    force = form.get("force") == "yes"
    was = await service.change(lambda: activate_version(service.app, name, number, force))
    query = urlencode({"collection": name, "now": number, "was": was})
    return RedirectResponse(f"/ui/versions?{query}", 303)


def _whole_collections(principal: Caller) -> None:
    """Versions are whole collections (their counts, their switch for every caller): not
    for a caller with a data scope."""
    if not principal.scope.unrestricted:
        raise AuthError(
            "versions concern every document of a collection: they need a token without a "
            "data scope (no tenants, datasets, roles or max_visibility limits)"
        )


def _number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise QueryError(f"version {text!r} is not a version number (1, 2, …): pick one below")
    return int(text)


def _check(service: Service, principal: Caller, name: str, number: int) -> dict[str, Any]:
    """The confirmation page: the version to activate, the active one, and the gate's
    verdict (or why there is none)."""
    app = service.app
    active = resolve_target(app.store, name)
    target = resolve_target(app.store, name, number)
    rows = {row.version.number: row for row in list_versions(app, name)}
    record = read_versions(app.store, name)
    context: dict[str, Any] = {
        "collection": name,
        "row": rows[number],
        "active": rows[active.number],
        "rollback": record is not None and record.previous == number,
        "needs_force": rows[number].version.state != READY,
        "gate": None,
        "gate_note": None,
    }
    golden = golden_path(service)
    if not golden.is_file():
        context["gate_note"] = (
            f"No golden questions yet ({golden}): on a trace's page, save its query as a "
            "regression case; the gate then measures each version before a switch."
        )
        return context
    if rows[number].active:
        return context  # nothing would change: nothing to measure
    try:
        check = gate_check(app, name, golden)
        context["gate"] = compare_versions(app, check, active, target).to_dict()
    except ConfigError as exc:  # no gate configured, or a golden file that does not read
        context["gate_note"] = _note(principal, str(exc))
    except KnowhubError as exc:  # the version cannot be searched (e.g. its embedder is gone)
        context["gate_note"] = _note(principal, f"it could not measure version {number}: {exc}")
    return context


def _note(principal: Caller, reason: str) -> str:
    """Why the gate did not run, as far as the caller may know: the reason names other
    collections (the gates configured, another's golden cases) to a token limited to some."""
    if "*" in principal.collections:
        return reason
    return (
        "The gate of this collection could not run: an administrator (a token that may read "
        "every collection) sees why here."
    )
