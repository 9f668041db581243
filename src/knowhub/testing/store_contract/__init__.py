"""The store contract (:mod:`knowhub.providers.stores.base`) as test classes to subclass.

Each test states one promise the pipelines rely on. A backend passes the contract when a
subclass of :class:`StoreContract` that provides a ``store_factory`` fixture passes::

    import pytest
    from knowhub.testing.store_contract import BackendFactory, StoreContract

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store_factory(self) -> BackendFactory:
            return lambda tmp_path: lambda: MyStore(tmp_path / "my.db")

``store_factory`` maps one test's ``tmp_path`` to an opener whose every call opens the
same, initially empty, data. A backend whose service is unreachable must fail, not skip,
so a missing server is never mistaken for a passing contract. The parts
(:class:`CatalogContract`, :class:`WriteContract`, :class:`SearchContract`,
:class:`ScopeContract`, :class:`LifecycleContract`) can be subclassed alone.
"""

from __future__ import annotations

from knowhub.testing.store_contract.base import BackendFactory, Opener, StoreFixtures
from knowhub.testing.store_contract.catalog import CatalogContract
from knowhub.testing.store_contract.lifecycle import LifecycleContract
from knowhub.testing.store_contract.scope import ScopeContract
from knowhub.testing.store_contract.search import SearchContract
from knowhub.testing.store_contract.writes import WriteContract

__all__ = [
    "BackendFactory",
    "CatalogContract",
    "LifecycleContract",
    "Opener",
    "ScopeContract",
    "SearchContract",
    "StoreContract",
    "StoreFixtures",
    "WriteContract",
]


class StoreContract(
    CatalogContract, WriteContract, SearchContract, ScopeContract, LifecycleContract
):
    """The whole store contract."""
