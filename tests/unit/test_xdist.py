"""The suite runs on pytest-xdist workers: what keeps them from colliding with each other."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import free_port
from tests.pg_server import remove_stale_dirs

EPHEMERAL_START = 32_768  # Linux's ip_local_port_range starts here by default


def test_workers_draw_ports_from_slices_of_their_own_below_the_ephemeral_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    drawn: list[set[int]] = []
    for worker in ("gw0", "gw1", "gw2", "gw3"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        drawn.append({free_port() for _ in range(30)})
    assert all(len(ports) == 30 for ports in drawn), "a worker was handed a port twice"
    assert max(max(ports) for ports in drawn) < EPHEMERAL_START
    spans = sorted((min(ports), max(ports)) for ports in drawn)
    assert all(one[1] < next_one[0] for one, next_one in itertools.pairwise(spans)), spans


def test_a_data_dir_deleted_by_another_worker_meanwhile_is_skipped(tmp_path: Path) -> None:
    # A dangling link is what a folder removed between the glob and the stat looks like.
    (tmp_path / "knowhub-pg-gone").symlink_to(tmp_path / "removed-meanwhile")
    remove_stale_dirs(tmp_path)  # must not raise FileNotFoundError


@pytest.fixture(scope="module")
def shared_by_the_module() -> Iterator[str]:
    yield "built once"


def test_tests_sharing_a_module_fixture_are_one_xdist_group(
    shared_by_the_module: str, request: pytest.FixtureRequest
) -> None:
    mark = request.node.get_closest_marker("xdist_group")
    assert mark is not None and mark.args == ("tests/unit/test_xdist.py",)


def test_a_test_without_a_shared_fixture_is_in_no_group(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("xdist_group") is None


GROUPED = """
import os
from pathlib import Path

import pytest

OUT = Path(os.environ["GROUPED_OUT"])


@pytest.mark.parametrize("n", range(6))
@pytest.mark.xdist_group("shared")
def test_grouped(n):
    with OUT.open("a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass
"""


def test_loadgroup_sends_a_group_to_one_worker(tmp_path: Path) -> None:
    """What the grouping above is for: xdist 3.8 renames a grouped test's node id, which
    pytest 9.2 no longer reads (it keeps ids elsewhere), and every group was then spread
    over the workers: a module-scoped server started once per worker and test order."""
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    out = tmp_path / "workers.txt"
    options = ["-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-c", os.devnull]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "--rootdir", str(tmp_path), str(tmp_path)],
        env={**os.environ, "GROUPED_OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = out.read_text().split()
    assert len(workers) == 6 and len(set(workers)) == 1, workers
