"""What a writer with a data scope may change: only documents it sees, only with scopes within
its own, and nothing that concerns every scope (pruning, FAQ entries, bundles) — found by a
review trying to re-tag another tenant's document, upload into another tenant and plant FAQ
answers. A real App on real SQLite files, the scope matrix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.caller import Caller
from knowhub.errors import AuthError, QueryError
from knowhub.scope import record_scope
from knowhub.testing.scope_matrix import SCOPES, WORD, ingest_matrix, markers_in
from tests.helpers import fast_settings, write

COLLECTION = "scoped"
HIDDEN = "mglobexrestrictedsupport"  # not seen by acme-internal


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    built = build_app(fast_settings(tmp_path / "data"))
    ingest_matrix(built, tmp_path / "docs", COLLECTION)
    yield built
    built.close()


def _acme(app: App) -> App:
    return app.scoped(SCOPES["acme-internal"])


def _hidden_scope(app: App) -> object:
    (record,) = [r for r in app.collection(COLLECTION).documents() if HIDDEN in r.source]
    return record_scope(record.metadata)


def _finds(app: App, word: str) -> bool:
    return any(word in h.text for h in app.collection(COLLECTION).search(word, top_k=5).hits)


def _seen(app: App) -> set[str]:
    return markers_in(h.text for h in app.collection(COLLECTION).search(WORD, top_k=30).hits)


def test_a_hidden_document_cannot_be_retagged_into_view_nor_is_it_reported(
    app: App, tmp_path: Path
) -> None:
    before = _hidden_scope(app)
    report = (
        _acme(app)
        .collection(COLLECTION)
        .ingest([tmp_path / "docs"], {"tenant": "acme", "visibility": "internal"})
    )
    named = {*report.current(), *(s for s, _ in report.failed), *(s for s, _ in report.warnings)}
    assert not any(HIDDEN in source for source in named)  # not touched, nor heard of
    assert _hidden_scope(app) == before and before is not None
    assert HIDDEN not in _seen(_acme(app))


def test_new_documents_get_scopes_within_the_writers_only(app: App, tmp_path: Path) -> None:
    write(tmp_path / "new" / "acme-note.md", f"# Acme note\n\nThe {WORD} acmenewnote.\n")
    outside = _acme(app).collection(COLLECTION).ingest([tmp_path / "new"], {"tenant": "globex"})
    ((_, reason),) = outside.failed
    assert "outside this token's data scope" in reason
    untagged = _acme(app).collection(COLLECTION).ingest([tmp_path / "new"])  # no tenant: shared? no
    assert untagged.failed and not untagged.added
    shared = _acme(app).collection(COLLECTION).ingest([tmp_path / "new"], {"tenant": "*"})
    assert shared.failed and not shared.added  # "*" would show it to every tenant
    inside = _acme(app).collection(COLLECTION).ingest([tmp_path / "new"], {"tenant": "acme"})
    assert inside.added and _finds(_acme(app), "acmenewnote")
    assert not _finds(app.scoped(SCOPES["globex-restricted-support"]), "acmenewnote")


def test_what_concerns_every_scope_needs_an_unrestricted_writer(app: App, tmp_path: Path) -> None:
    write(tmp_path / "faq.csv", "question,answer\nHow do I reset my password?,Ask IT.\n")
    acme = _acme(app).collection(COLLECTION)
    with pytest.raises(AuthError, match=r"FAQ entries .* needs an unrestricted data scope"):
        acme.faq_import([tmp_path / "faq.csv"])
    with pytest.raises(AuthError, match=r"pruning .* needs an unrestricted data scope"):
        _acme(app).collection(COLLECTION).ingest(
            [tmp_path / "docs"], {"tenant": "acme"}, prune=True
        )
    app.collection(COLLECTION).export(tmp_path / "all.jsonl")
    with pytest.raises(AuthError, match=r"importing .* needs an unrestricted data scope"):
        acme.import_bundle(tmp_path / "all.jsonl")
    assert app.collection(COLLECTION).faq_import([tmp_path / "faq.csv"])  # unrestricted: yes


def test_an_unknown_filter_key_never_names_a_hidden_documents_keys(
    app: App, tmp_path: Path
) -> None:
    write(tmp_path / "secret" / "orchid.md", f"# Orchid\n\nThe {WORD} orchid plan.\n")
    tags = {"tenant": "globex", "visibility": "restricted", "orchid_codename": "yes"}
    app.collection(COLLECTION).ingest([tmp_path / "secret"], tags)
    with pytest.raises(QueryError) as caught:
        app.scoped(SCOPES["acme-internal"]).collection(COLLECTION).search(
            WORD, filters={"nosuch": "1"}
        )
    assert "orchid_codename" not in str(caught.value)
    with pytest.raises(QueryError):  # as unknown to it as any other key
        app.scoped(SCOPES["acme-internal"]).collection(COLLECTION).search(
            WORD, filters={"orchid_codename": "yes"}
        )
    with pytest.raises(QueryError) as unrestricted:
        app.collection(COLLECTION).search(WORD, filters={"nosuch": "1"})
    assert "orchid_codename" in str(unrestricted.value)


def test_two_tokens_of_one_name_share_conversations_only_if_they_see_alike() -> None:

    wide, narrow = Caller("team"), Caller("team", scope=SCOPES["acme-public-sales"])
    rotated = Caller("team")  # the same token's next secret while rotating
    assert wide.owner != narrow.owner and wide.owner == rotated.owner
    # A chat's turns hold what its MCP servers returned: one without them reads none.
    without_jira = Caller("team", mcp_servers=frozenset())
    assert without_jira.owner != wide.owner


def test_a_document_shared_wider_than_the_writer_is_not_its_to_narrow_or_remove(
    app: App, tmp_path: Path
) -> None:
    globex = app.scoped(SCOPES["globex-restricted-support"])
    assert "msharedpublic" in _seen(globex)
    report = (
        _acme(app)
        .collection(COLLECTION)
        .ingest([tmp_path / "docs" / "msharedpublic.md"], {"tenant": "acme"})
    )
    assert not report.current() and not report.failed  # left alone, silently
    assert "msharedpublic" in _seen(globex)
    with pytest.raises(QueryError, match="that this token may remove"):
        _acme(app).collection(COLLECTION).remove(str(tmp_path / "docs" / "msharedpublic.md"))
    assert "msharedpublic" in _seen(globex)
