"""The data-scope test matrix: two tenants × three visibilities × two roles in one
collection, plus a document shared by every tenant and one with no scope tags.

Each document's text holds the common word :data:`WORD` and its own marker, so one search
for :data:`WORD` (top_k :data:`TOP_K`) reaches every document the caller may see; an
interface test compares the markers it got with :func:`visible` for the caller's scope:
equal means nothing hidden leaked and nothing visible was lost.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from knowhub.app import App
from knowhub.scope import VISIBILITIES, DocumentScope, Scope, document_scope

__all__ = [
    "MATRIX",
    "SCOPES",
    "TOP_K",
    "WORD",
    "MatrixDoc",
    "env_name",
    "ingest_matrix",
    "markers_in",
    "secret",
    "server_env",
    "token_entries",
    "visible",
    "write_matrix",
]

WORD = "scopematrix"
TENANTS = ("acme", "globex")
ROLES = ("sales", "support")
TOP_K = 20


@dataclass(frozen=True)
class MatrixDoc:
    """One document of the matrix: its tags and the marker word only it holds."""

    marker: str
    tags: tuple[tuple[str, str], ...]

    @property
    def scope(self) -> DocumentScope:
        return document_scope(dict(self.tags), {})

    @property
    def text(self) -> str:
        return f"# {self.marker}\n\nThe {WORD} handbook page {self.marker} for this scope.\n"


def _doc(tenant: str, visibility: str, role: str) -> MatrixDoc:
    tags = (("tenant", tenant), ("visibility", visibility), ("roles", role))
    return MatrixDoc(f"m{tenant}{visibility}{role}", tags)


MATRIX: tuple[MatrixDoc, ...] = (
    *(_doc(t, v, r) for t, v, r in itertools.product(TENANTS, VISIBILITIES, ROLES)),
    MatrixDoc("msharedpublic", (("tenant", "*"), ("visibility", "public"))),
    MatrixDoc("muntagged", ()),
)

# Callers by token name: each sees a different slice (``admin``: everything).
SCOPES: dict[str, Scope] = {
    "admin": Scope(),
    "acme-public-sales": Scope.of(["acme"], max_visibility="public", roles=["sales"]),
    "acme-internal": Scope.of(["acme"], max_visibility="internal"),
    "globex-restricted-support": Scope.of(["globex"], roles=["support"]),
    "any-tenant-public": Scope.of(max_visibility="public"),
}


def visible(scope: Scope) -> set[str]:
    """The markers of the documents ``scope`` sees."""
    return {doc.marker for doc in MATRIX if scope.admits(doc.scope)}


def markers_in(texts: Iterable[str]) -> set[str]:
    """The matrix markers found in ``texts`` (hit texts, a page, a JSON body)."""
    joined = "\n".join(texts)
    return {doc.marker for doc in MATRIX if doc.marker in joined}


def write_matrix(folder: Path) -> list[tuple[Path, dict[str, str]]]:
    """Write each document to ``folder``; returns (file, tags) to ingest each with."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for doc in MATRIX:
        path = folder / f"{doc.marker}.md"
        path.write_text(doc.text, encoding="utf-8")
        out.append((path, dict(doc.tags)))
    return out


def token_entries() -> list[dict[str, object]]:
    """``server.tokens`` entries for :data:`SCOPES`; token NAME's secret is in the
    environment variable ``KH_SCOPE_<NAME>`` (upper case, dashes as underscores)."""
    entries: list[dict[str, object]] = []
    for name, scope in SCOPES.items():
        listed = scope.to_dict()
        entries.append(
            {
                "name": name,
                "token_env": env_name(name),
                "tenants": listed["tenants"],
                "datasets": listed["datasets"],
                "max_visibility": listed["max_visibility"],
                "roles": listed["roles"],
            }
        )
    return entries


def env_name(token: str) -> str:
    return "KH_SCOPE_" + token.upper().replace("-", "_")


def secret(token: str) -> str:
    """The test secret of token ``token`` (what :func:`server_env` sets)."""
    return f"scope-{token}-Qm7xT2kV9pL4"


def server_env() -> dict[str, str]:
    """The environment giving a server :data:`SCOPES` as its tokens, with their secrets."""
    return {
        "KNOWHUB_SERVER__TOKENS": json.dumps(token_entries()),
        **{env_name(name): secret(name) for name in SCOPES},
    }


def ingest_matrix(app: App, folder: Path, collection: str = "scoped") -> None:
    """Write the matrix to ``folder`` and ingest each document with its own tags."""
    for path, tags in write_matrix(folder):
        app.collection(collection).ingest([path], tags)
