"""Fixtures the end-to-end tests share: the console's browser (tests/console_helpers.py)."""

from tests.console_helpers import browser, context  # noqa: F401  (fixtures, found by name)
