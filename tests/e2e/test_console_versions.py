"""The console's versions page in a real Chromium against a real server process: a
collection's builds listed, a switch shown with the gate's verdict on the version it makes
active, then made (and rolled back); a version whose gate failed only with "anyway"; read-only
tokens and other sites refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from knowhub import build_app
from knowhub.versions.build import build_version
from knowhub.versions.record import FAILED, resolve_target, set_version
from tests.console_helpers import screenshots, sign_in
from tests.helpers import fast_settings, write
from tests.http_helpers import FULL, LIMITED, READER, TOKEN_ENV, ApiServer, api_server

TOPICS = ("backups", "deployments", "incidents")


@dataclass
class Site:
    server: ApiServer

    def url(self, path: str) -> str:
        return self.server.url + path

    def chunks(self, collection: str) -> int:
        """How many chunks the API says the collection's active version holds."""
        reply = self.server.get("/api/collections", FULL)
        assert reply.status_code == 200, reply.text
        found = [c for c in reply.json()["collections"] if c["name"] == collection]
        return int(found[0]["chunks"])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("versions")
    for topic in TOPICS:
        paragraphs = [
            f"Paragraph {i} on {topic}: the {topic} runbook says step {i} is checked twice "
            f"and logged in the {topic} journal, then reviewed by the on-call engineer."
            for i in range(8)
        ]
        text = f"# {topic.title()}\n\n" + "\n\n".join(paragraphs)
        write(root / "docs" / f"{topic}.md", text)
    data = root / "data"
    golden = [{"query": f"{t} runbook journal", "expected_sources": [f"{t}.md"]} for t in TOPICS]
    # A case saved from a trace of another collection: never judged against `default`.
    golden.append({"query": "q", "expected_sources": ["elsewhere.md"], "collection": "other"})
    write(data / "golden.json", json.dumps(golden))  # where the console saves cases
    # A gate for `default` only: switching `other` says there is none.
    write(root / "knowhub.yaml", "eval:\n  gates:\n    default: {hit_rate@10: 1.0}\n")
    app = build_app(fast_settings(data))
    try:
        for name in ("default", "other"):
            app.collection(name).ingest([root / "docs"])
            assert build_version(app, name, chunk_size=60).ok
        # `other`'s version 2 did not pass its gate at build (as a failed --gate marks it).
        set_version(app.store, resolve_target(app.store, "other", 2), state=FAILED)
    finally:
        app.close()
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        yield Site(server)


@pytest.fixture
def page(context: BrowserContext, site: Site) -> Page:
    opened = context.new_page()
    sign_in(opened, site.server.url, FULL, "/ui/versions")
    return opened


def test_switch_with_the_gate_result_then_roll_back(page: Page, site: Site) -> None:
    before = site.chunks("default")
    table = page.locator("#versions")
    expect(table.locator("tr[data-version]")).to_have_count(2)
    expect(table.locator("tr.active")).to_have_attribute("data-version", "1")
    expect(table.locator("tr[data-version='2']")).to_contain_text("chunks of 60")
    screenshots(page, "versions", ["#versions", "button.switch"])

    page.click("button[aria-label='Activate version 2']")
    expect(page.locator("h1")).to_contain_text("to version 2?")
    gate = page.locator("#gate-result")
    expect(gate).to_contain_text("Passed")
    expect(gate.locator("table.gate")).to_contain_text("hit_rate@10")
    expect(gate).to_contain_text("3 golden questions")
    screenshots(page, "confirm-switch", ["#gate-result", "#confirm-switch button"])
    assert site.chunks("default") == before  # nothing switched yet

    page.click("#confirm-switch button")
    expect(page.locator("#switched")).to_have_text("Version 2 of default is active (was 1).")
    expect(table.locator("tr.active")).to_have_attribute("data-version", "2")
    after = site.chunks("default")
    assert after > before  # the API now answers from the build with smaller chunks
    page.reload()  # the switch redirected: a reload shows the list, it posts nothing again
    expect(table.locator("tr.active")).to_have_attribute("data-version", "2")
    searched = site.server.post("/api/search", FULL, json={"query": "incidents on call"})
    assert searched.status_code == 200, searched.text
    traces = site.server.get("/ui/traces", FULL, params={"kind": "search"})
    assert traces.status_code == 200 and "incidents on call" in traces.text, traces.text
    assert "runbook journal" not in traces.text  # the gate's questions are not traffic

    page.click("button[aria-label='Roll back to version 1']")
    expect(page.locator("h1")).to_contain_text("Roll back")
    expect(page.locator("#gate-result")).to_contain_text("Passed")
    confirm = page.locator("#confirm-switch")
    form = {
        i.get_attribute("name") or "": i.get_attribute("value") or ""
        for i in confirm.locator("input[type=hidden]").all()
    }
    page.click("#confirm-switch button")
    expect(page.locator("#switched")).to_have_text("Version 1 of default is active (was 2).")
    assert site.chunks("default") == before
    again = page.request.post(  # the same confirmation sent twice: still version 1
        site.url("/ui/versions/switch"), form=form, headers={"Origin": site.server.url}
    )
    assert again.ok, again.text()
    assert "Version 1 of default was already active." in again.text()
    assert site.chunks("default") == before


def test_a_failed_version_is_activated_only_anyway_and_a_missing_gate_says_so(
    page: Page, site: Site
) -> None:
    page.goto(site.url("/ui/versions?collection=other"))
    expect(page.locator("tr[data-version='2']")).to_contain_text("failed")
    page.click("button[aria-label='Activate version 2']")
    expect(page.locator("#gate-note")).to_contain_text("no gate for collection 'other'")
    expect(page.locator("#confirm-switch")).to_contain_text("Version 2 is failed")
    origin = {"Origin": site.server.url}
    forced_not = {"collection": "other", "version": "2", "confirm": "yes"}
    refused = page.request.post(site.url("/ui/versions/switch"), form=forced_not, headers=origin)
    assert refused.status == 400, refused.text()
    assert "activate it anyway with --force" in refused.text()
    page.check("input[name=force]")
    page.click("#confirm-switch button")
    expect(page.locator("#switched")).to_have_text("Version 2 of other is active (was 1).")


def test_a_read_only_token_sees_the_versions_but_cannot_switch(
    context: BrowserContext, site: Site
) -> None:
    page = context.new_page()
    sign_in(page, site.server.url, READER, "/ui/versions")
    expect(page.locator("#versions tr[data-version]")).to_have_count(2)
    expect(page.locator("button.switch")).to_have_count(0)
    active = page.locator("#versions tr.active").get_attribute("data-version")
    reply = page.request.post(
        site.url("/ui/versions/switch"),
        form={"collection": "default", "rollback": "yes", "confirm": "yes"},
        headers={"Origin": site.server.url},
    )
    assert reply.status == 403, reply.text()
    assert "read-only" in reply.text()
    page.reload()
    expect(page.locator("#versions tr.active")).to_have_attribute("data-version", active or "")


def test_a_switch_posted_from_another_site_is_refused(site: Site) -> None:
    for origin in ("http://localhost:1", None):
        headers = {"Origin": origin} if origin else {}
        reply = site.server.post(
            "/ui/versions/switch",
            FULL,
            headers=headers,
            data={"collection": "default", "version": "2", "confirm": "yes"},
        )
        assert reply.status_code == 403, reply.text
        assert "accepted from the console" in reply.text


def test_a_token_limited_to_one_collection_sees_only_its_versions(
    context: BrowserContext, site: Site
) -> None:
    page = context.new_page()
    sign_in(page, site.server.url, LIMITED, "/ui/versions")
    expect(page.locator("select[name=collection] option")).to_have_count(1)  # default only
    assert page.goto(site.url("/ui/versions?collection=other")).status == 403  # type: ignore[union-attr]
    expect(page.locator("body")).not_to_contain_text("chunks of 60")
