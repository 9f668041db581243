"""The store contract, part five: a caller's data scope (``knowhub.scope``) as filters.

The scope reaches a store as plain filters (:meth:`knowhub.scope.Scope.filters`) over the
attributes ingest writes into each chunk; both legs must return exactly the rows the scope
admits, before their limit, with the caller's own filters ANDed.
"""

from __future__ import annotations

import numpy as np

from knowhub.providers.stores.base import Store
from knowhub.scope import Scope
from knowhub.testing.scope_matrix import MATRIX, SCOPES, WORD, markers_in, visible
from knowhub.testing.store_contract.base import StoreFixtures, lexical, texts
from knowhub.testing.store_data import DIM, make_doc, new_collection, normalised, put

__all__ = ["ScopeContract"]


def _matrix(store: Store) -> int:
    """The scope matrix in a new collection, one chunk per document."""
    cid = new_collection(store)
    for i, doc in enumerate(MATRIX):
        metadata = doc.scope.chunk_metadata() if doc.tags else {}  # untagged: as before scopes
        put(store, cid, make_doc(f"{doc.marker}.md", [doc.text], metadata=metadata, seed=i))
    return cid


def _found(store: Store, cid: int, scope: Scope, limit: int = 50) -> tuple[set[str], set[str]]:
    filters = scope.constrain({})
    assert filters is not None
    query = normalised(np.ones(DIM))[0]
    return (
        markers_in(texts(store, lexical(store, cid, WORD, limit, filters))),
        markers_in(texts(store, store.dense_search(cid, query, limit, filters))),
    )


class ScopeContract(StoreFixtures):
    """Data scope: both legs return what the scope admits, nothing else."""

    def test_each_leg_returns_exactly_what_a_scope_admits(self, store: Store) -> None:
        cid = _matrix(store)
        for name, scope in SCOPES.items():
            lexical_found, dense_found = _found(store, cid, scope)
            assert lexical_found == visible(scope), name
            assert dense_found == visible(scope), name
        assert len(visible(SCOPES["acme-public-sales"])) == 2, "set-up: a narrow slice"

    def test_a_scope_applies_before_the_limit(self, store: Store) -> None:
        cid = _matrix(store)
        scope = SCOPES["acme-public-sales"]
        lexical_found, dense_found = _found(store, cid, scope, limit=2)
        assert lexical_found == dense_found == visible(scope)

    def test_a_callers_filter_is_anded_with_its_scope(self, store: Store) -> None:
        cid = _matrix(store)
        scope = SCOPES["acme-internal"]
        assert scope.constrain({"tenant": "globex"}) is None  # outside it: nothing at all
        filters = scope.constrain({"visibility": ("public", "restricted")})
        assert filters is not None
        found = markers_in(texts(store, lexical(store, cid, WORD, 50, filters)))
        assert found == {"macmepublicsales", "macmepublicsupport", "msharedpublic"}
