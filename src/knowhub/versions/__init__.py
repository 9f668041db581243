"""Knowledge-base versions: a collection answered from one of its builds at a time.

:mod:`.record` is the record itself (below the App: every request reads it);
:mod:`.build`, :mod:`.gate` and :mod:`.switch` build a version beside the active one, gate
it on golden questions and switch between versions (above the App: they drive it).
The record's names are re-exported here.
"""

from knowhub.versions.record import (
    BUILDING,
    FAILED,
    READY,
    CollectionView,
    Target,
    Version,
    VersionSet,
    collection_views,
    embedder_spec,
    physical_name,
    read_versions,
    resolve_target,
    set_version,
    target_settings,
    update,
    update_with,
    utc_now,
    version_settings,
)

__all__ = [
    "BUILDING",
    "FAILED",
    "READY",
    "CollectionView",
    "Target",
    "Version",
    "VersionSet",
    "collection_views",
    "embedder_spec",
    "physical_name",
    "read_versions",
    "resolve_target",
    "set_version",
    "target_settings",
    "update",
    "update_with",
    "utc_now",
    "version_settings",
]
