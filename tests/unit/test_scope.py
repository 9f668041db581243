"""The data-scope model (knowhub.scope): document attributes, a caller's filters, digests."""

from __future__ import annotations

import pytest

from knowhub.scope import (
    UNRESTRICTED,
    DocumentScope,
    Scope,
    ScopeValueError,
    chunk_scope,
    document_scope,
)
from knowhub.testing.scope_matrix import MATRIX, SCOPES, visible


def test_tags_win_over_the_configured_default_and_roles_are_a_comma_list() -> None:
    found = document_scope(
        {"tenant": "acme", "roles": "sales, support,sales"}, {"tenant": "x", "dataset": "hr"}
    )
    assert found == DocumentScope("acme", "hr", "internal", ("sales", "support"))


def test_a_document_without_scope_tags_is_internal_and_open_to_every_role() -> None:
    assert document_scope({}, {}) == DocumentScope(None, None, "internal", ())
    assert document_scope({"roles": "*,sales"}, {}).roles == ()


def test_a_bad_visibility_names_the_tag_and_the_values() -> None:
    with pytest.raises(ScopeValueError, match=r"tag visibility='secret'.*public, internal"):
        document_scope({"visibility": "secret"}, {})
    with pytest.raises(ScopeValueError, match=r"ingest.scope visibility="):
        document_scope({}, {"visibility": "top"}, where="ingest.scope")


def test_a_document_has_one_tenant() -> None:
    with pytest.raises(ScopeValueError, match=r"tenant='a,b' names several.*tenant=\*"):
        document_scope({"tenant": "a,b"}, {})


def test_a_callers_max_visibility_must_be_a_visibility() -> None:
    with pytest.raises(ScopeValueError, match="max_visibility 'secret'"):
        Scope.of(max_visibility="secret")


def test_filters_and_admits_agree_on_every_matrix_document() -> None:
    """What the stores run (filters over chunk metadata) and what listings check (admits)
    must be one rule: evaluated here by hand over each chunk's metadata."""
    for name, scope in SCOPES.items():
        filters = scope.filters()
        for doc in MATRIX:
            metadata = doc.scope.chunk_metadata()
            passes = all(_matches(metadata.get(key), value) for key, value in filters.items())
            assert passes == scope.admits(doc.scope), (name, doc.marker)


def _matches(stored: object, allowed: str | tuple[str, ...]) -> bool:
    values = stored if isinstance(stored, list) else [stored]
    wanted = allowed if isinstance(allowed, tuple) else (allowed,)
    return any(v in wanted for v in values if v is not None)


def test_the_matrix_slices_are_as_designed() -> None:
    assert visible(SCOPES["admin"]) == {doc.marker for doc in MATRIX}
    assert visible(SCOPES["acme-public-sales"]) == {"macmepublicsales", "msharedpublic"}
    assert "muntagged" not in visible(SCOPES["acme-internal"])  # no tenant: no tenant sees it
    assert visible(SCOPES["any-tenant-public"]) == {
        "macmepublicsales",
        "macmepublicsupport",
        "mglobexpublicsales",
        "mglobexpublicsupport",
        "msharedpublic",
    }


def test_an_unrestricted_scope_adds_no_filter_and_sees_records_from_before_scopes() -> None:
    assert UNRESTRICTED.filters() == {}
    assert UNRESTRICTED.admits(None)
    assert not SCOPES["any-tenant-public"].admits(None)


def test_a_callers_filter_narrows_its_scope_and_never_widens_it() -> None:
    scope = Scope.of(["acme"])
    assert scope.constrain({"tenant": ("acme", "globex")}) == {"tenant": ("acme",)}
    assert scope.constrain({"tenant": "globex"}) is None
    assert scope.constrain({"team": "ops"}) == {"team": "ops", "tenant": ("acme", "*")}


def test_digests_differ_between_scopes_and_are_stable() -> None:
    digests = {scope.digest() for scope in SCOPES.values()}
    assert len(digests) == len(SCOPES)
    assert Scope.of(["b", "a"]).digest() == Scope.of(["a", "b"]).digest()


def test_a_chunks_scope_is_read_back_from_its_metadata() -> None:
    doc = DocumentScope("acme", None, "restricted", ("sales",))
    assert chunk_scope(doc.chunk_metadata()) == doc
    assert chunk_scope(DocumentScope().chunk_metadata()) == DocumentScope()
    assert chunk_scope({"team": "ops"}) is None


def test_a_scope_covers_only_scopes_within_it_in_every_dimension() -> None:
    acme = Scope.of(["acme"], max_visibility="internal", roles=["sales"])
    assert UNRESTRICTED.covers(acme) and acme.covers(acme)
    assert not acme.covers(UNRESTRICTED)
    assert acme.covers(Scope.of(["acme"], max_visibility="public", roles=["sales"]))
    assert not acme.covers(Scope.of(["acme", "globex"], max_visibility="internal", roles=["sales"]))
    assert not acme.covers(Scope.of(["acme"], max_visibility="restricted", roles=["sales"]))
    assert not acme.covers(Scope.of(["acme"], max_visibility="internal", roles=["support"]))
    assert acme.covers(Scope.of(["acme"], ["hr"], "internal", roles=["sales"]))


@pytest.mark.parametrize("name", SCOPES)
def test_a_scope_reads_back_from_what_a_trace_records(name: str) -> None:
    assert Scope.from_dict(SCOPES[name].to_dict()) == SCOPES[name]
