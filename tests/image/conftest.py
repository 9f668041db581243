"""The image is built once per run; its size and build time end the run's summary."""

from __future__ import annotations

import pytest

from tests.image.buildah import IMAGE, build_image, buildah

# Filled by the image_built fixture, read by the summary.
BUILD: dict[str, float] = {}


@pytest.fixture(scope="session")
def image_built() -> float:
    """Build the Dockerfile's image (layers reused from an earlier run); the seconds it took."""
    seconds = build_image()
    size = buildah("images", "--format", "{{.Size}}", "--noheading", IMAGE).split("\n")[0]
    BUILD.update(seconds=seconds, bytes=_bytes(size))
    return seconds


def _bytes(size: str) -> float:
    """buildah's ``871 MB`` (decimal units) as bytes."""
    number, unit = size.split()
    return float(number) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if BUILD:
        terminalreporter.write_line(
            f"image {IMAGE}: {BUILD['bytes'] / 1e6:.0f} MB, built in {BUILD['seconds']:.0f} s"
        )
