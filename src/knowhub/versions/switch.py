"""Switching versions: activate, roll back, drop, list. Each change is one compare-and-set
of the versions record (:mod:`knowhub.versions.record`), so it is atomic for every process
using the store, and each request reads the record when it starts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from knowhub.errors import QueryError, StoreError
from knowhub.providers.stores.base import Store
from knowhub.query import calibration, tuning
from knowhub.versions.liveness import INTERRUPTED, describe, interrupted, read_claim, release
from knowhub.versions.record import (
    BUILDING,
    READY,
    Version,
    VersionSet,
    embedder_spec,
    read_versions,
    update_with,
)

if TYPE_CHECKING:  # annotations only: the CLI's other commands never load the App
    from knowhub.app import App

__all__ = [
    "VersionRow",
    "activate_version",
    "drop_version",
    "first_record",
    "list_versions",
    "rollback_version",
    "state_of",
]


@dataclass(frozen=True)
class VersionRow:
    """One line of ``knowhub versions list``."""

    collection: str
    version: Version
    active: bool
    previous: bool
    documents: int | None  # None: its store collection does not exist (yet)
    chunks: int | None
    state: str  # the version's, or interrupted for a build whose process is gone

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            **asdict(self.version),
            "state": self.state,
            "active": self.active,
            "previous": self.previous,
            "documents": self.documents,
            "chunks": self.chunks,
        }


def state_of(store: Store, collection: str, version: Version) -> str:
    """``version``'s state as shown: as recorded, or :data:`INTERRUPTED` when it is marked
    building but its builder is gone (:mod:`knowhub.versions.liveness`)."""
    if version.state == BUILDING and interrupted(
        read_claim(store, collection, version.number), version.created_at
    ):
        return INTERRUPTED
    return version.state


def _not_ready(store: Store, collection: str, version: Version) -> str:
    """Why ``version`` (not ready) cannot answer, and what to do."""
    state = state_of(store, collection, version)
    fix = "activate it anyway with --force, or build another"
    if state == INTERRUPTED:
        fix = (
            f"its build stopped ({describe(read_claim(store, collection, version.number))} is "
            f"gone): resume it with `knowhub versions build --collection {collection} --resume "
            f"{version.number}`, or drop it"
        )
    gate = " (its gate failed)" if version.gate and not version.gate["passed"] else ""
    return f"version {version.number} of {collection!r} is {state}{gate}: {fix}"


def first_record(app: App, collection: str, pin: bool = False) -> VersionSet:
    """The record of a collection that has had one version so far, "as configured". With
    ``pin`` (when the record is first written) that version is pinned to the configured
    embedder and chunking if its vectors are the configured model's: what built it, then."""
    built, dim = app.store.embedder_of(app.collection(collection).store_id())
    info = next(c for c in app.store.collections() if c.name == collection)
    pinned = pin and (built, dim) == (app.embedder.model_id, app.embedder.dim)
    first = Version(
        1,
        collection,
        built,
        dim,
        embedder_spec(app.settings) if pinned else None,
        app.settings.chunking.model_dump() if pinned else None,
        info.created_at,
        READY,
    )
    return VersionSet(collection, (first,), active=1)


def activate_version(app: App, collection: str | None, number: int, force: bool = False) -> int:
    """Make version ``number`` the active one; returns the number of the one it replaced.

    A building or failed version is refused unless ``force``; one without data always.
    """
    name = app.resolve(collection).collection
    if read_versions(app.store, name) is None and number == 1:
        app.collection(name).store_id()  # an unknown collection is an error
        return 1  # it never had another version: nothing to switch

    def change(record: VersionSet | None) -> tuple[VersionSet, int]:
        current = record or first_record(app, name)
        version = current.get(number)
        if version.state != READY and not force:
            raise QueryError(_not_ready(app.store, name, version))
        if app.store.collection_id(version.physical) is None:
            raise StoreError(f"version {number} of {name!r} has no data in the store: build it")
        if current.active == number:
            return current, number
        return replace(current, active=number, previous=current.active), current.active

    return update_with(app.store, name, change)[1]


def rollback_version(app: App, collection: str | None) -> tuple[int, int]:
    """Make the previously active version active again; returns the numbers of the one now
    active and of the one it replaced (rolling back twice returns to where you started)."""
    name = app.resolve(collection).collection

    def change(record: VersionSet | None) -> tuple[VersionSet, int]:
        if record is None or record.previous is None:
            raise QueryError(
                f"collection {name!r} has no previously active version to roll back to: "
                f"see `knowhub versions list --collection {name}`"
            )
        back = record.get(record.previous)
        return replace(record, active=back.number, previous=record.active), record.active

    record, was = update_with(app.store, name, change)
    return record.active, was


def drop_version(app: App, collection: str | None, number: int, force: bool = False) -> Version:
    """Delete version ``number``: out of the record first (so nothing resolves to it any
    more), then its data. The active version is refused; one still building unless ``force``
    (a version whose build stopped is not building)."""
    name = app.resolve(collection).collection

    def change(record: VersionSet | None) -> tuple[VersionSet, Version]:
        current = record or first_record(app, name)
        version = current.get(number)
        if number == current.active:
            raise QueryError(
                f"version {number} is the active version of {name!r}: activate another "
                "first (`knowhub versions activate`), then drop it"
            )
        if state_of(app.store, name, version) == BUILDING and not force:
            raise QueryError(
                f"version {number} of {name!r} is still building "
                f"({describe(read_claim(app.store, name, number))}); if its build died, "
                "drop it with --force"
            )
        rest = tuple(v for v in current.versions if v.number != number)
        previous = None if current.previous == number else current.previous
        return replace(current, versions=rest, previous=previous), version

    dropped = update_with(app.store, name, change)[1]
    release(app.store, name, number)
    cid = app.store.collection_id(dropped.physical)
    if cid is not None:
        app.store.drop_collection(cid)
        calibration.forget(app.store, cid)  # what was measured for it goes with it
        tuning.forget(app.store, cid)
    return dropped


def list_versions(app: App, collection: str | None = None) -> list[VersionRow]:
    """Every version of ``collection`` (of every collection when None), oldest first."""
    names = (
        [app.resolve(collection).collection] if collection else [c.name for c in app.collections()]
    )
    counts = {c.name: (c.documents, c.chunks) for c in app.store.collections()}
    rows = []
    for name in names:
        record = read_versions(app.store, name) or first_record(app, name)
        for version in record.versions:
            documents, chunks = counts.get(version.physical, (None, None))
            rows.append(
                VersionRow(
                    name,
                    version,
                    version.number == record.active,
                    version.number == record.previous,
                    documents,
                    chunks,
                    state_of(app.store, name, version),
                )
            )
    return rows
