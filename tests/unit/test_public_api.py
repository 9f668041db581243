"""Guard: every module's ``__all__`` lists exactly its public classes and functions."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import knowhub

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(knowhub.__path__, "knowhub.")
    if m.name != "knowhub.__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_all_matches_public_definitions(name: str) -> None:
    module = importlib.import_module(name)
    if not hasattr(module, "__all__"):
        assert not [
            n for n, o in vars(module).items() if _defined_here(o, name) and not n.startswith("_")
        ], f"{name} defines public names but has no __all__"
        return
    exported = set(module.__all__)
    assert all(hasattr(module, n) for n in exported), f"{name}.__all__ names something missing"
    defined = {
        n for n, o in vars(module).items() if _defined_here(o, name) and not n.startswith("_")
    }
    assert defined <= exported, f"{name}: public but not in __all__: {sorted(defined - exported)}"


def _defined_here(obj: object, module: str) -> bool:
    return (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == module


def test_package_root_exports_the_app_and_errors() -> None:
    for name in ("App", "build_app", "load_settings", "Settings", "KnowhubError", "Hit"):
        assert name in knowhub.__all__


# Each command module imported first, in a process of its own, with no knowhub.interfaces.cli*
# loaded before it.
_IMPORT_EACH_ALONE = """
import importlib, sys
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.startswith("knowhub.interfaces.cli")]:
        del sys.modules[loaded]
    importlib.import_module(name)
"""


def test_a_cli_command_module_imports_before_the_cli() -> None:
    """A plugin, a test or a pytest-xdist worker may import one command module first; the
    CLI imports them all to join them, so none may import the CLI back."""
    commands = [m for m in MODULES if m.startswith("knowhub.interfaces.cli.")]
    assert len(commands) > 5
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH_ALONE, *commands],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
