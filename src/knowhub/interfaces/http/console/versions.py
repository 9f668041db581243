"""The console's versions page: a collection's builds (``knowhub versions``), which one
answers, and for tokens that may write, switching to another or rolling back.

A switch takes two steps. The first post shows what the switch would do with the gate's
verdict on the version it makes active — the golden questions saved from traces
(``DATA_DIR/golden.json``) measured on that version next to the active one, against
``eval.gates`` — measured there and then and recorded nowhere; the second (``confirm=yes``)
switches, atomically, as ``knowhub versions activate`` / ``rollback`` do. A version whose
state is not ready (its gate failed at build) needs ``force=yes``, as ``--force`` does.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from knowhub.errors import ConfigError, KnowhubError, QueryError
from knowhub.interfaces.http.console.auth import check_same_origin, read_form
from knowhub.interfaces.http.console.pages import gathered, pages_router, readable_names
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.console.traces import golden_path
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep
from knowhub.interfaces.http.service import Service
from knowhub.interfaces.security import Principal
from knowhub.versions.gate import compare_versions, gate_check
from knowhub.versions.record import READY, read_versions, resolve_target
from knowhub.versions.switch import activate_version, list_versions, rollback_version

__all__ = ["router", "switch", "versions"]

router = pages_router()


@router.get("/versions")
async def versions(
    request: Request, service: ServiceDep, principal: PrincipalDep, collection: str | None = None
) -> Response:
    name = service.collection(principal, collection)

    def gather(principal: Principal) -> dict[str, Any]:
        return _listing(service, principal, name, None)

    return await gathered(request, service, principal, "versions.html", gather)


@router.post("/versions/switch")
async def switch(request: Request, service: ServiceDep, principal: PrincipalDep) -> Response:
    """Activate ``version`` (or, with ``rollback=yes``, the previously active one): shown
    with its gate result first, done once ``confirm=yes``."""
    check_same_origin(request)
    principal.check_write("switch versions")
    form = await read_form(request)
    name = service.collection(principal, form.get("collection") or None)
    rollback = form.get("rollback") == "yes"
    number = await service.run(lambda: _target_number(service, name, rollback, form))
    if form.get("confirm") != "yes":
        check = await service.run(lambda: _check(service, name, number))
        return page(request, "confirm_switch.html", **check)

    def done() -> str:
        app = service.app
        if rollback:
            now, was = rollback_version(app, name)
        else:
            now, was = number, activate_version(app, name, number, form.get("force") == "yes")
        if now == was:
            return f"Version {now} of {name} was already active."
        return f"Version {now} of {name} is active (was {was})."

    message = await service.run(done)
    context = await service.run(lambda: _listing(service, principal, name, message))
    return page(request, "versions.html", **context)


def _listing(
    service: Service, principal: Principal, name: str, message: str | None
) -> dict[str, Any]:
    record = read_versions(service.app.store, name)
    return {
        "names": readable_names(service.app, principal),
        "collection": name,
        "rows": list_versions(service.app, name),
        "previous": None if record is None else record.previous,
        "message": message,
    }


def _target_number(service: Service, name: str, rollback: bool, form: dict[str, str]) -> int:
    """The version the switch makes active: the form's, or the previously active one."""
    if rollback:
        record = read_versions(service.app.store, name)
        if record is None or record.previous is None:
            raise QueryError(f"collection {name!r} has no previously active version to go back to")
        return record.previous
    text = form.get("version", "")
    if not text.isdigit() or int(text) < 1:
        raise QueryError(f"version {text!r} is not a version number (1, 2, …): pick one below")
    return int(text)


def _check(service: Service, name: str, number: int) -> dict[str, Any]:
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
    try:
        check = gate_check(app, name, golden)
        context["gate"] = compare_versions(app, check, active, target).to_dict()
    except ConfigError as exc:  # no gate configured, or a golden file that does not read
        context["gate_note"] = str(exc)
    except KnowhubError as exc:  # the version cannot be searched (e.g. its embedder is gone)
        context["gate_note"] = f"the gate could not measure version {number}: {exc}"
    return context
