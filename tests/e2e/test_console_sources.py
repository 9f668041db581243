"""The console's sources page in a real Chromium against a real ``serve http``: reached from
the navigation, a configured repository refreshed and an unconfigured one added, the page
reloading itself until each run has ended; a bad spec answered on the form."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect

from tests.console_helpers import sign_in
from tests.git_helpers import commit_all, new_repository
from tests.helpers import write
from tests.http_helpers import FULL, TOKEN_ENV, ApiServer, api_server


@dataclass
class Served:
    server: ApiServer
    handbook: Path
    notes: Path


def _repository(path: Path, text: str) -> Path:
    work = new_repository(path, {"docs/page.md": text})
    commit_all(work, "first")
    return work


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("console-sources")
    handbook = _repository(root / "handbook", "# Guide\n\nInstall the quokkabeam package.\n")
    notes = _repository(root / "notes", "# Notes\n\nAsk the zebrafinch team.\n")
    write(
        root / "knowhub.yaml",
        f"sources:\n  - git: file://{handbook}\n    name: handbook\n    refresh: manual\n",
    )
    with api_server(cwd=root, data_dir=root / "data", env=TOKEN_ENV) as server:
        yield Served(server, handbook, notes)


def test_a_source_is_refreshed_and_another_added_from_the_page(
    served: Served, context: BrowserContext
) -> None:
    page = context.new_page()
    sign_in(page, served.server.url, FULL)
    page.click("nav a:has-text('Sources')")
    row = page.locator("tr.source[data-name='handbook']")
    expect(row).to_contain_text(f"git+file://{served.handbook}")
    expect(row).to_contain_text("never")
    row.locator("button:has-text('Refresh')").click()
    # The page reloads itself while the run is under way; it ends done, with its summary.
    expect(row.locator(".run-state")).to_have_text("done")
    expect(row).to_contain_text("1 added")
    expect(row).not_to_contain_text("never")
    page.fill("input[name=spec]", f"git+file://{served.notes}")
    page.fill("input[name=new_collection]", "notes")
    page.click("#add-button")
    added = page.locator("#added li.run")
    expect(added).to_contain_text("into notes")
    expect(added.locator(".run-state")).to_have_text("done")
    expect(added).to_contain_text("1 added")


def test_a_bad_spec_is_shown_on_the_form(served: Served, context: BrowserContext) -> None:
    page = context.new_page()
    sign_in(page, served.server.url, FULL, "/ui/sources")
    page.fill("input[name=spec]", "/etc/passwd")
    page.click("#add-button")
    expect(page.locator("#sources-error")).to_contain_text("spec: '/etc/passwd' is not a website")
    expect(page.locator("input[name=spec]")).to_have_value("/etc/passwd")
