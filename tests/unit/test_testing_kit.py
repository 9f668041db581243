"""knowhub.testing is a kit for plugin authors: used by a store as knowhub's backends use it,
and never loaded by knowhub itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

from knowhub.providers.stores.sqlite import SQLiteStore
from knowhub.testing.store_contract import BackendFactory, CatalogContract

_IMPORT_KNOWHUB = """
import sys
import knowhub, knowhub.app, knowhub.interfaces.cli
loaded = [m for m in sys.modules if m.startswith("knowhub.testing") or m == "pytest"]
assert not loaded, loaded
"""


def test_knowhub_never_imports_its_test_kit_or_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_KNOWHUB],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


class TestAPluginStoreGetsTheContractBySubclassing(CatalogContract):
    """A part of the contract, with the factory defined where a plugin would define it."""

    @pytest.fixture
    def store_factory(self) -> BackendFactory:
        return lambda tmp_path: lambda: SQLiteStore(tmp_path / "plugin.sqlite3")
