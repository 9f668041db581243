"""The servers' refresher tries a failing source again only after a while, not at each of
its minutely checks (a site that is down is not asked every minute); one that recovers is
refreshed on its interval again (real SQLite files, a real git repository)."""

from __future__ import annotations

from pathlib import Path

from knowhub import App, build_app
from knowhub.interfaces.sources import RefreshLog, SourceRefresher
from tests.git_helpers import commit_all, new_repository
from tests.helpers import fast_settings


def test_a_failing_source_waits_before_it_is_tried_again(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    settings = fast_settings(
        tmp_path / "data", sources=[{"git": str(repository), "refresh": "1d", "name": "handbook"}]
    )
    app = build_app(settings)
    opened: list[App] = []

    def writer() -> App:
        opened.append(app)
        return app

    refresher = SourceRefresher(settings, writer)
    log = RefreshLog(settings.data_dir)
    try:
        refresher.refresh_due(log, 1_000_000.0)  # no repository there yet: fails
        assert len(opened) == 1 and "handbook" not in log.read()
        refresher.refresh_due(log, 1_000_060.0)  # the next minute's check passes it over
        assert len(opened) == 1
        new_repository(repository, {"guide.md": "# Guide\n\nThe quokkabeam starts it.\n"})
        commit_all(repository, "first")
        refresher.refresh_due(log, 1_000_000.0 + 901)  # after the retry wait: done
        assert len(opened) == 2 and log.read()["handbook"] > 0
        assert app.collection().search("quokkabeam").hits
    finally:
        app.close()
