"""The console's sources page against a real ``knowhub serve http`` and real git
repositories (``git+file://``): the configured ``sources:`` listed to the tokens that may
write and read their collection, a repository added from the form indexed in the
background and cited ``repo@commit:path``, a refresh bringing in only what a new commit
changed, and a bad spec answered on the form naming the field."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from tests.git_helpers import commit_all, new_repository
from tests.helpers import write
from tests.http_helpers import (
    FULL,
    LIMITED,
    READER,
    TOKEN_ENV,
    TOKENS,
    ApiServer,
    api_server,
)
from tests.mcp_helpers import wait_until
from tests.upload_helpers import FROM_PAGE

GUIDE = "# Guide\n\nInstall the quokkabeam package first.\n"
SECRET = "# Minutes\n\nThe orchid merger is secret.\n"
SCOPED = "acme-Vb8nQ2wE5rT1yU4i"  # a token with a data scope (tenant acme)
NOTES = "# Notes\n\nAsk the zebrafinch team.\n"


@dataclass
class Served:
    server: ApiServer
    handbook: Path  # the repository of source "handbook" (collection default)
    secret: Path  # the repository of source "secret" (collection private)
    notes: Path  # a repository that no source names, added from the form


def _repository(root: Path, name: str, text: str) -> Path:
    work = new_repository(root / name, {"docs/page.md": text})
    commit_all(work, "first")
    return work


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("console-sources")
    handbook = _repository(root / "repos", "handbook", GUIDE)
    secret = _repository(root / "repos", "secret", SECRET)
    notes = _repository(root / "repos", "notes", NOTES)
    write(
        root / "knowhub.yaml",
        "sources:\n"
        f"  - git: file://{handbook}\n    name: handbook\n    collection: default\n"
        "    refresh: manual\n"
        f"  - git: file://{secret}\n    name: secret\n    collection: private\n"
        "    refresh: manual\n",
    )
    tokens = [*TOKENS, {"name": "acme", "token_env": "KH_TEST_ACME", "tenants": ["acme"]}]
    env = {
        **TOKEN_ENV,
        "KNOWHUB_SERVER__TOKENS": json.dumps(tokens),
        "KH_TEST_ACME": SCOPED,
        "KNOWHUB_INGEST__WEB__ALLOW_PRIVATE_NETWORKS": "false",
    }
    with api_server(cwd=root, data_dir=root / "data", env=env) as server:
        yield Served(server, handbook, secret, notes)


def _post(served: Served, path: str, token: str, **form: str) -> Any:
    return served.server.post(path, token, data=form, headers=FROM_PAGE)


def _run_of(page: str, marker: str) -> str:
    """The state of the run shown after ``marker`` on the page ("" when none is)."""
    after = page.split(marker, 1)
    found = re.search(r'data-state="(\w+)"', after[1].split("</tr>")[0]) if len(after) > 1 else None
    return found[1] if found else ""


def _finished(served: Served, token: str, marker: str) -> str:
    """The page once the run after ``marker`` has ended (polled, as the page reloads)."""

    def ended() -> str | None:
        shown = served.server.get("/ui/sources", token).text
        return shown if _run_of(shown, marker) in ("done", "failed") else None

    page: str = wait_until(ended)
    return page


def _sources_of(served: Served, query: str, collection: str) -> list[str]:
    found = served.server.post("/api/search", FULL, json={"query": query, "collection": collection})
    assert found.status_code == 200, found.text
    return [hit["source"] for hit in found.json()["hits"]]


def test_the_page_lists_the_sources_a_writer_may_read(served: Served) -> None:
    full = served.server.get("/ui/sources", FULL)
    limited = served.server.get("/ui/sources", LIMITED)
    reader = served.server.get("/ui/sources", READER)
    assert full.status_code == 200, full.text
    assert 'data-name="handbook"' in full.text and 'data-name="secret"' in full.text
    assert f"git+file://{served.handbook}" in full.text and "manual (knowhub sync)" in full.text
    assert 'href="/ui/sources"' in full.text  # in the navigation
    assert limited.status_code == 200 and 'data-name="handbook"' in limited.text
    assert "secret" not in limited.text and "private" not in limited.text
    assert reader.status_code == 403 and "read-only" in reader.text
    assert 'href="/ui/sources"' not in served.server.get("/ui", READER).text


def test_a_repository_added_in_the_console_is_indexed_in_the_background(
    served: Served,
) -> None:
    spec = f"git+file://{served.notes}"
    started = _post(served, "/ui/sources/add", FULL, spec=spec, collection="default")
    assert started.status_code == 303 and started.headers["location"] == "/ui/sources"
    page = _finished(served, FULL, f"<code>{spec}</code> into default")
    assert _run_of(page, f"<code>{spec}</code>") == "done", page
    assert "1 added" in page
    commit = served.notes.joinpath(".git/refs/heads/main").read_text().strip()[:12]
    assert _sources_of(served, "zebrafinch", "default")[0] == f"{spec}@{commit}:docs/page.md"


def test_a_refresh_reads_only_what_a_new_commit_changed(served: Served) -> None:
    marker = 'data-name="handbook"'
    assert _post(served, "/ui/sources/refresh", LIMITED, name="handbook").status_code == 303
    first = _finished(served, LIMITED, marker)
    assert _run_of(first, marker) == "done", first
    assert "1 added" in first and "never" not in first.split(marker)[1].split("</tr>")[0]
    write(served.handbook / "docs/page.md", GUIDE + "\nThen run quokkabeam --init.\n")
    write(served.handbook / "docs/more.md", "# More\n\nThe kiln fires at noon.\n")
    commit = commit_all(served.handbook, "second")
    # All: every source the token sees, so handbook and never secret (private's).
    assert _post(served, "/ui/sources/refresh", LIMITED, name="").status_code == 303
    again = _finished(served, LIMITED, marker)
    assert _run_of(again, marker) == "done", again
    assert "1 added, 1 updated" in again, again
    spec = f"git+file://{served.handbook}"
    assert f"{spec}@{commit}:docs/page.md" in _sources_of(served, "quokkabeam init", "default")
    full = served.server.get("/ui/sources", FULL).text
    assert _run_of(full, 'data-name="secret"') == ""
    listed = served.server.get("/api/collections", FULL).json()
    assert "private" not in str(listed)  # never ingested: no refresh ran for secret


def test_a_limited_token_cannot_reach_another_collections_source(served: Served) -> None:
    refresh = _post(served, "/ui/sources/refresh", LIMITED, name="secret")
    add = _post(
        served, "/ui/sources/add", LIMITED, spec=f"git+file://{served.notes}", collection="private"
    )
    assert refresh.status_code == 404 and "no source named 'secret'" in unescape(refresh.text)
    assert add.status_code == 403 and "private" in add.text
    assert "orchid" not in refresh.text + add.text


@pytest.mark.parametrize(("token", "collection"), [(SCOPED, "scoped"), (LIMITED, "default")])
def test_a_repository_is_refused_at_once_to_a_limited_token(
    served: Served, token: str, collection: str
) -> None:
    # git fetches with the server's own access: a token limited in anything may not borrow it
    spec = f"git+file://{served.notes}"
    refused = _post(served, "/ui/sources/add", token, spec=spec, collection=collection)
    assert refused.status_code == 403, refused.text
    assert "fetched with the server's own access" in unescape(refused.text)
    listed = served.server.get("/api/collections", FULL).json()
    assert "scoped" not in str(listed)  # nothing was fetched


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"spec": ""}, "spec: type a website"),
        ({"spec": "/srv/docs"}, "spec: '/srv/docs' is not a website or repository"),
        ({"spec": "ftp://example.org/docs/"}, "is not a website or repository"),
        ({"spec": "http://127.0.0.1:9/docs/"}, "allow_private_networks"),
        ({"spec": "https://example.org/", "depth": "deep"}, "depth: 'deep' is not a whole"),
        ({"spec": "git+file:///srv/repo.git", "max_pages": "5"}, "max_pages: a website's"),
    ],
)
def test_a_bad_spec_is_answered_on_the_form_naming_the_field(
    served: Served, form: dict[str, str], said: str
) -> None:
    answered = _post(served, "/ui/sources/add", FULL, collection="default", **form)
    assert answered.status_code == 400, answered.text
    assert 'id="sources-error"' in answered.text and said in unescape(answered.text)
    assert 'id="add-source"' in answered.text  # the form again, as typed
    if form["spec"]:
        assert f'value="{form["spec"]}"' in answered.text


def test_a_post_from_another_site_is_refused(served: Served) -> None:
    foreign = {"Origin": "https://evil.example.org"}
    sent = served.server.post(
        "/ui/sources/refresh", FULL, data={"name": "handbook"}, headers=foreign
    )
    assert sent.status_code == 403
