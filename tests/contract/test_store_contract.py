"""The store contract (knowhub.testing.store_contract), run against every backend of
conftest.BACKENDS through its ``store_factory`` fixture."""

from __future__ import annotations

from knowhub.testing.store_contract import StoreContract


class TestStoreContract(StoreContract):
    """Every test of the contract, once per backend."""
