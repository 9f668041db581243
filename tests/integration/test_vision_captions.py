"""Captions of pictures by a vision model: each provider's wire form of a picture against the
scripted server over real HTTP (which refuses a malformed picture as the real servers do),
the caption kept per picture and model, and a run that stops asking a model that fails."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from knowhub.config import load_settings
from knowhub.errors import ConfigError
from knowhub.ingest.loaders.figures import CaptionError
from knowhub.ingest.pictures import image_options
from knowhub.testing import llm_server
from knowhub.testing.llm_images_wire import ollama_images, openai_parts
from knowhub.testing.llm_server import LlmServer
from tests.pictures_helpers import shapes_png

PICTURE = shapes_png(11)


def _captioner(server: LlmServer, provider: str, tmp_path: Path, model: str = "llava:13b") -> Any:
    settings = load_settings(
        env={},
        overrides={
            "data_dir": tmp_path,
            "llm.provider": provider,
            "llm.base_url": server.openai_base if provider == "openai" else server.url,
            "llm.model": "chat-only",
            "llm.max_retries": 0,
            "ingest.images.vision_model": model,
        },
    )
    options = image_options(settings)
    assert options.caption is not None and options.store is not None
    return options.caption, options.store


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_caption_is_asked_with_the_picture_once_per_picture(
    provider: str, tmp_path: Path
) -> None:
    with llm_server.serve("A scatter plot of shift hours against output.") as server:
        caption, store = _captioner(server, provider, tmp_path)
        sha = store.put(PICTURE, "png")
        assert caption(sha, PICTURE, "image/png") == "A scatter plot of shift hours against output."
        assert caption(sha, PICTURE, "image/png") == "A scatter plot of shift hours against output."
        (request,) = server.requests  # the second came from the image store
    body = request.body
    assert body["model"] == "llava:13b"
    user = body["messages"][-1]
    if provider == "openai":
        text, image = user["content"]
        assert text == {"type": "text", "text": "Describe this picture."}
        assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(
            PICTURE
        ).decode("ascii")
    else:
        assert user["content"] == "Describe this picture."
        assert [base64.b64decode(i) for i in user["images"]] == [PICTURE]


def test_another_model_asks_again(tmp_path: Path) -> None:
    with llm_server.serve("A caption.") as server:
        first, store = _captioner(server, "openai", tmp_path, "vision-a")
        second, _ = _captioner(server, "openai", tmp_path, "vision-b")
        sha = store.put(PICTURE, "png")
        first(sha, PICTURE, "image/png")
        second(sha, PICTURE, "image/png")
        assert [r.body["model"] for r in server.requests] == ["vision-a", "vision-b"]


def test_a_failing_model_is_given_up_after_three_failures_in_a_row(tmp_path: Path) -> None:
    with llm_server.serve(fail="500", times=None) as server:
        caption, store = _captioner(server, "openai", tmp_path)
        shas = [store.put(shapes_png(seed), "png") for seed in range(5)]
        for sha in shas:
            with pytest.raises(CaptionError):
                caption(sha, store.get(sha)[0], "image/png")  # type: ignore[index]
        assert len(server.requests) == 3


def test_a_vision_model_without_a_provider_names_both_settings(tmp_path: Path) -> None:
    settings = load_settings(
        env={}, overrides={"data_dir": tmp_path, "ingest.images.vision_model": "llava"}
    )
    with pytest.raises(ConfigError, match=r"vision_model is .llava. but llm\.provider is none"):
        image_options(settings)


def test_pictures_off_extracts_nothing(tmp_path: Path) -> None:
    settings = load_settings(
        env={}, overrides={"data_dir": tmp_path, "ingest.images.extract": False}
    )
    assert image_options(settings).store is None


@pytest.mark.parametrize(
    ("parts", "said"),
    [
        ([{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}], "base64"),
        (
            [
                {
                    "type": "image_url",
                    "image_url": {
                        "url": "data:image/jpeg;base64," + base64.b64encode(PICTURE).decode()
                    },
                }
            ],
            "unsupported image",
        ),
        ([{"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}], "data URL"),
        ([{"type": "video", "video": {}}], "Supported values are: 'text' and 'image_url'"),
        ([], "non-empty array"),
    ],
)
def test_the_scripted_server_refuses_a_malformed_picture(parts: Any, said: str) -> None:
    assert said in (openai_parts("messages[1].content", parts) or "")


def test_the_scripted_ollama_refuses_images_that_are_not_base64_pictures() -> None:
    assert ollama_images(["@@@"]) == "illegal base64 data"
    assert ollama_images([base64.b64encode(b"GIF89a-not-really").decode()]) is not None
    assert ollama_images([base64.b64encode(PICTURE).decode()]) is None
    assert ollama_images(None) is None


def test_pictures_indexed_without_a_vision_model_are_captioned_once_one_is_set(
    tmp_path: Path,
) -> None:
    from knowhub import build_app
    from tests.helpers import fast_settings
    from tests.pictures_helpers import word_with_figure

    word_with_figure(tmp_path / "docs" / "plant.docx", PICTURE, alt="Plant floor")
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        assert app.collection().ingest([tmp_path / "docs"]).added == ["plant.docx"]
    finally:
        app.close()
    with llm_server.serve("A floor plan of the Kestrel plant with two exits.") as server:
        vision = {
            "llm.provider": "openai",
            "llm.base_url": server.openai_base,
            "llm.model": "chat-only",
            "ingest.images.vision_model": "vision-model",
        }
        app = build_app(fast_settings(tmp_path / "data", **vision))
        try:
            assert app.collection().ingest([tmp_path / "docs"]).updated == ["plant.docx"]
            hit = app.collection().search("Kestrel plant floor plan exits", top_k=1).hits[0]
            assert "two exits" in hit.text and hit.metadata["image"]
            assert app.collection().ingest([tmp_path / "docs"]).unchanged == ["plant.docx"]
        finally:
            app.close()
        assert len(server.requests) == 1


def test_azure_sends_captions_to_the_vision_deployment(tmp_path: Path) -> None:
    with llm_server.serve("A caption.", deployment="gpt4o-vision") as server:
        settings = load_settings(
            env={"AZURE_KEY": "az-test-key"},
            overrides={
                "data_dir": tmp_path,
                "llm.provider": "azure",
                "llm.api_key_env": "AZURE_KEY",
                "llm.azure.endpoint": server.url,
                "llm.azure.deployment": "chat-mini",
                "llm.max_retries": 0,
                "ingest.images.vision_model": "gpt4o-vision",
            },
        )
        options = image_options(settings)
        assert options.caption is not None and options.store is not None
        sha = options.store.put(PICTURE, "png")
        assert options.caption(sha, PICTURE, "image/png") == "A caption."
        (request,) = server.requests
    assert request.path == "/openai/deployments/gpt4o-vision/chat/completions"


def test_a_summary_lists_at_most_20_pictures_with_short_descriptions() -> None:
    from knowhub.interfaces.mcp.tools.pictures import document_images, images_count, images_line
    from knowhub.models import DocumentRecord

    listed = [
        {
            "sha256": f"{n:064x}",
            "mime": "image/png",
            "width": 80,
            "height": 80,
            "page": n + 1,
            "description": "word " * 1000,
            "described_by": "alt",
            "chunk_id": None,
        }
        for n in range(150)
    ]
    record = DocumentRecord(
        "default",
        "a.pdf",
        "/a.pdf",
        "h" * 64,
        1,
        1,
        "A",
        "pdf",
        1,
        1,
        1,
        "now",
        {"knowhub": {"images": listed}},
    )
    images = document_images(record)
    assert len(images) == 20 and all(len(i.description) <= 300 for i in images)
    assert images_count(record) == 150
    assert images_line(images, 150).startswith("\n\n150 pictures: p. 1: word word")
    assert images_line(images, 150).endswith("; 140 more")
