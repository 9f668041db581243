"""Row-level data scope: which documents a caller may see inside a collection.

A document carries four scope attributes, set at ingest from its tags (``--tag tenant=acme``)
or from ``ingest.scope`` (:class:`DocumentScope`). A caller (a token, a console login, the CLI
with ``--as-token``) carries a :class:`Scope`; every read of documents goes through it:

* searches (and so answers and chats) AND :meth:`Scope.filters` with the caller's filters,
  so both legs apply it inside the store before fusion, on every backend;
* listings, a document's chunks, summaries and counts check each record with
  :meth:`Scope.admits`.

The rules, the same on both paths (docs/security.md, "Data scope"):

* ``tenant`` / ``dataset``: a scoped caller sees a document of one of its tenants, or one
  tagged ``*`` (shared by all); a document with none is seen only by callers unrestricted in
  that dimension — a forgotten tag hides a document, it never shows it to another tenant.
* ``visibility``: public < internal < restricted; a document without one is ``internal``; a
  caller sees up to its ``max_visibility``.
* ``roles``: a document without roles is open to every role; one with roles is seen by a
  caller holding one of them (or unrestricted in roles).

Chunks hold the attributes as filterable metadata (:meth:`DocumentScope.chunk_metadata`):
``visibility`` always, ``roles`` always (``["*"]`` when open), ``tenant``/``dataset`` when
set, so that each rule is a plain "value in set" filter that every store already runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowhub.models import Filters, FilterValue

if TYPE_CHECKING:
    from knowhub.config import TokenSettings

__all__ = [
    "ANY",
    "SCOPE_KEYS",
    "UNRESTRICTED",
    "VISIBILITIES",
    "DocumentScope",
    "Scope",
    "ScopeValueError",
    "chunk_scope",
    "document_scope",
    "record_scope",
    "token_scope",
]

ANY = "*"
VISIBILITIES = ("public", "internal", "restricted")  # in rank order
DEFAULT_VISIBILITY = "internal"
SCOPE_KEYS = ("tenant", "dataset", "visibility", "roles")


class ScopeValueError(ValueError):
    """A scope attribute's value is not one it can take (the message names it and the fix)."""


@dataclass(frozen=True)
class DocumentScope:
    """A document's scope attributes (None: not set)."""

    tenant: str | None = None
    dataset: str | None = None
    visibility: str = DEFAULT_VISIBILITY
    roles: tuple[str, ...] = ()  # empty: open to every role

    def chunk_metadata(self) -> dict[str, Any]:
        """What every chunk of the document holds, for :meth:`Scope.filters` to match."""
        out: dict[str, Any] = {"visibility": self.visibility, "roles": list(self.roles or [ANY])}
        if self.tenant is not None:
            out["tenant"] = self.tenant
        if self.dataset is not None:
            out["dataset"] = self.dataset
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "dataset": self.dataset,
            "visibility": self.visibility,
            "roles": list(self.roles),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DocumentScope:
        return cls(
            data.get("tenant"),
            data.get("dataset"),
            str(data.get("visibility") or DEFAULT_VISIBILITY),
            tuple(data.get("roles") or ()),
        )


def document_scope(
    tags: Mapping[str, str], default: Mapping[str, str], where: str = "tag"
) -> DocumentScope:
    """A document's scope from its tags, each attribute falling back to ``default``
    (``ingest.scope``). ``roles`` is a comma list. A bad value raises
    :class:`ScopeValueError` naming ``where`` and the key."""
    merged = {k: v for k, v in {**default, **tags}.items() if k in SCOPE_KEYS and v.strip()}
    visibility = merged.get("visibility", DEFAULT_VISIBILITY).strip().lower()
    if visibility not in VISIBILITIES:
        raise ScopeValueError(
            f"{where} visibility={merged['visibility']!r} is not a visibility: use one of "
            f"{', '.join(VISIBILITIES)} (e.g. --tag visibility=internal)"
        )
    roles = tuple(sorted({r.strip() for r in merged.get("roles", "").split(",") if r.strip()}))
    if ANY in roles:
        roles = ()  # "*" among the roles: open to every role, as no roles at all
    tenant, dataset = (_single(merged, key, where) for key in ("tenant", "dataset"))
    return DocumentScope(tenant, dataset, visibility, roles)


def _single(merged: Mapping[str, str], key: str, where: str) -> str | None:
    value = merged.get(key)
    if value is None:
        return None
    value = value.strip()
    if "," in value:
        raise ScopeValueError(
            f"{where} {key}={value!r} names several: a document has one {key} "
            f"(use {key}=* to share it with every {key})"
        )
    return value


@dataclass(frozen=True)
class Scope:
    """What a caller may see; None in a dimension: unrestricted there."""

    tenants: frozenset[str] | None = None
    datasets: frozenset[str] | None = None
    max_visibility: str = VISIBILITIES[-1]
    roles: frozenset[str] | None = None

    @classmethod
    def of(
        cls,
        tenants: Iterable[str] = (ANY,),
        datasets: Iterable[str] = (ANY,),
        max_visibility: str = VISIBILITIES[-1],
        roles: Iterable[str] = (ANY,),
    ) -> Scope:
        """From settings' lists, where ``"*"`` means unrestricted."""
        if max_visibility not in VISIBILITIES:
            raise ScopeValueError(
                f"max_visibility {max_visibility!r} is not a visibility: use one of "
                f"{', '.join(VISIBILITIES)}"
            )
        return cls(_limit(tenants), _limit(datasets), max_visibility, _limit(roles))

    @property
    def unrestricted(self) -> bool:
        return self == UNRESTRICTED

    def filters(self) -> dict[str, FilterValue]:
        """The filters that keep only what this scope sees (none when unrestricted)."""
        out: dict[str, FilterValue] = {}
        for key, allowed in (
            ("tenant", self.tenants),
            ("dataset", self.datasets),
            ("roles", self.roles),
        ):
            if allowed is not None:
                out[key] = (*sorted(allowed), ANY)
        rank = VISIBILITIES.index(self.max_visibility)
        if rank < len(VISIBILITIES) - 1:
            out["visibility"] = VISIBILITIES[: rank + 1]
        return out

    def constrain(self, filters: Filters) -> dict[str, FilterValue] | None:
        """``filters`` ANDed with this scope's; None when no row can pass both (a caller's
        filter on ``tenant`` naming only tenants outside the scope)."""
        out = dict(filters)
        for key, allowed in self.filters().items():
            if key not in out:
                out[key] = allowed
                continue
            given = out[key]
            kept = tuple(
                v for v in (given if isinstance(given, tuple) else (given,)) if v in allowed
            )
            if not kept:
                return None
            out[key] = kept
        return out

    def admits(self, document: DocumentScope | None) -> bool:
        """Whether this scope sees ``document`` (None: a record from before scopes, which
        only an unrestricted caller sees — its chunks hold no attributes to filter on)."""
        if self.unrestricted:
            return True
        if document is None:
            return False
        ranks = VISIBILITIES.index
        return (
            _member(document.tenant, self.tenants)
            and _member(document.dataset, self.datasets)
            and ranks(document.visibility) <= ranks(self.max_visibility)
            and (self.roles is None or not document.roles or bool(self.roles & set(document.roles)))
        )

    def may_write(self, document: DocumentScope) -> bool:
        """Whether a caller of this scope may give a document ``document``'s scope: within
        its own in every dimension, never wider (a tenant-scoped writer cannot share a
        document with every tenant, nor open it to every role)."""
        if self.unrestricted:
            return True
        ranks = VISIBILITIES.index
        return (
            _within(document.tenant, self.tenants)
            and _within(document.dataset, self.datasets)
            and ranks(document.visibility) <= ranks(self.max_visibility)
            and (self.roles is None or (bool(document.roles) and set(document.roles) <= self.roles))
        )

    def covers(self, other: Scope) -> bool:
        """Whether everything ``other`` sees, this scope sees too (each of its dimensions
        is within this one's): who may read a run recorded under ``other``."""
        ranks = VISIBILITIES.index
        return all(
            mine is None or (theirs is not None and theirs <= mine)
            for mine, theirs in (
                (self.tenants, other.tenants),
                (self.datasets, other.datasets),
                (self.roles, other.roles),
            )
        ) and ranks(other.max_visibility) <= ranks(self.max_visibility)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scope:
        """Back from :meth:`to_dict` (a trace's ``scope``)."""
        return cls.of(
            data.get("tenants", (ANY,)),
            data.get("datasets", (ANY,)),
            str(data.get("max_visibility", VISIBILITIES[-1])),
            data.get("roles", (ANY,)),
        )

    def to_dict(self) -> dict[str, Any]:
        """For traces and reports: ``"*"`` for an unrestricted dimension."""
        return {
            "tenants": _listed(self.tenants),
            "datasets": _listed(self.datasets),
            "max_visibility": self.max_visibility,
            "roles": _listed(self.roles),
        }

    def digest(self) -> str:
        """A short stable digest: what caches key on, so no entry is served across scopes."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


UNRESTRICTED = Scope()


def _limit(values: Iterable[str]) -> frozenset[str] | None:
    found = frozenset(v.strip() for v in values if v.strip())
    return None if ANY in found else found


def _member(value: str | None, allowed: frozenset[str] | None) -> bool:
    return allowed is None or value == ANY or (value is not None and value in allowed)


def _listed(values: frozenset[str] | None) -> list[str]:
    return [ANY] if values is None else sorted(values)


def record_scope(metadata: Mapping[str, Any]) -> DocumentScope | None:
    """The scope ingest stored in a document record's metadata (``knowhub.scope``); None
    for a record written before scopes existed."""
    own = metadata.get("knowhub")
    found = own.get("scope") if isinstance(own, Mapping) else None
    return DocumentScope.from_dict(found) if isinstance(found, Mapping) else None


def chunk_scope(metadata: Mapping[str, Any]) -> DocumentScope | None:
    """A chunk's scope, read back from the attributes ingest wrote into its metadata
    (:meth:`DocumentScope.chunk_metadata`); None for a chunk from before scopes."""
    visibility = metadata.get("visibility")
    if visibility not in VISIBILITIES:
        return None
    roles = metadata.get("roles")
    listed = [str(r) for r in roles] if isinstance(roles, list) else []
    return DocumentScope(
        metadata.get("tenant"),
        metadata.get("dataset"),
        str(visibility),
        () if ANY in listed or not listed else tuple(listed),
    )


def _within(value: str | None, allowed: frozenset[str] | None) -> bool:
    return allowed is None or (value is not None and value != ANY and value in allowed)


def token_scope(spec: TokenSettings) -> Scope:
    """The data scope a token's settings give it (here, not with the servers' security:
    the CLI's ``--as-token`` needs it without loading an HTTP stack)."""
    return Scope.of(spec.tenants, spec.datasets, spec.max_visibility, spec.roles)
