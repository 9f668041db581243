"""Which collection a request that names none reads.

The configured ``collection`` (``default`` unless set). A data dir made by ``knowhub import``
of a bundle, or by ingesting with ``--collection``, may hold one collection under another
name; then a command given no collection would fail with "unknown collection 'default'"
although there is only one it could mean, so it reads that one. A ``collection`` set in the
config file, the environment or a flag is always taken as it is: the user chose it.
"""

from __future__ import annotations

from knowhub.checks import logical_name
from knowhub.config import Settings
from knowhub.providers.stores.base import Store

__all__ = ["default_collection"]


def default_collection(store: Store, settings: Settings) -> str:
    """The configured collection, or the only one there is when the configured one is the
    unset default and does not exist."""
    configured = settings.collection
    if "collection" in settings.model_fields_set or store.collection_id(configured) is not None:
        return configured
    names = {logical_name(info.name) for info in store.collections()}
    return names.pop() if len(names) == 1 else configured
