"""Pictures inside documents, end to end: ``knowhub serve mcp`` over stdio (the official SDK
client) on Word, PowerPoint and PDF files with pictures, captioned by a scripted vision model
over real HTTP (OpenAI's wire format: the picture as a data URL in a content part)."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from mcp_types import ImageContent
from PIL import Image

from knowhub.testing.llm_server import LlmServer
from knowhub.testing.llm_server import serve as serve_llm
from tests.mcp_stdio_helpers import call, indexed, serve
from tests.pictures_helpers import (
    deck_with_picture,
    pdf_with_picture,
    shapes_png,
    text_png,
    word_with_figure,
)

pytestmark = pytest.mark.anyio

FIGURE, SLIDE, SCAN = shapes_png(1), shapes_png(2), shapes_png(3)
CAPTIONS = {
    FIGURE: "A bar chart of Zephyr turbine output by quarter, rising from 40 to 75 MW.",
    SLIDE: "A photo of the Quillon assembly line with six orange robots.",
    SCAN: "A diagram of the Marlowe coolant loop with two pumps and a heat exchanger.",
}


def _pixels(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as picture:
        return picture.convert("RGB").tobytes()


def _sent_pictures(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """The (MIME type, bytes) of each picture in a chat-completions request."""
    sent = []
    for message in body["messages"]:
        if isinstance(message["content"], list):
            for part in message["content"]:
                if part["type"] == "image_url":
                    header, encoded = part["image_url"]["url"].split(",", 1)
                    sent.append(
                        (header.removeprefix("data:").split(";")[0], base64.b64decode(encoded))
                    )
    return sent


def _caption(body: dict[str, Any]) -> str:
    """The scripted vision model: the caption of the picture it was sent (by its pixels)."""
    ((_, data),) = _sent_pictures(body)
    for original, caption in CAPTIONS.items():
        if _pixels(original) == _pixels(data):
            return caption
    raise AssertionError("a picture that is none of the documents'")


def _vision_env(llm: LlmServer) -> dict[str, str]:
    return {
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__BASE_URL": llm.openai_base,
        "KNOWHUB_LLM__MODEL": "chat-model",
        "KNOWHUB_LLM__MAX_RETRIES": "0",
        "KNOWHUB_INGEST__IMAGES__VISION_MODEL": "vision-model",
    }


def _corpus(root: Path) -> None:
    word_with_figure(root / "docs" / "plant.docx", FIGURE)
    deck_with_picture(root / "docs" / "review.pptx", SLIDE)
    pdf_with_picture(root / "docs" / "log.pdf", SCAN)


async def test_pictures_are_captioned_once_found_and_returned_as_images(tmp_path: Path) -> None:
    _corpus(tmp_path)
    with serve_llm(script=_caption) as llm:
        async with serve(tmp_path, env=_vision_env(llm)) as client:
            await indexed(client, 3)
            # One call per picture (the 16-px icon passed over), each the picture itself:
            # the Word and slide pictures as they were embedded, the PDF's as its pixels.
            sent = [p for r in llm.requests for p in _sent_pictures(r.body)]
            assert len(sent) == 3
            assert all(r.body["model"] == "vision-model" for r in llm.requests)
            assert {data for _, data in sent} >= {FIGURE, SLIDE}
            assert {mime for mime, _ in sent} == {"image/png"}
            assert _pixels(SCAN) in {_pixels(data) for _, data in sent}

            result = await client.call_tool(
                "query_knowledge_hub", {"query": "Zephyr turbine output chart"}
            )
            hit = result.structured_content["hits"][0]  # type: ignore[index]
            assert hit["source"].endswith("plant.docx")
            assert "Zephyr turbine output" in hit["text"] and hit["image"]
            image = result.content[1]
            assert isinstance(image, ImageContent) and image.mime_type == "image/png"
            assert base64.b64decode(image.data) == FIGURE

            hits = (await call(client, "query_knowledge_hub", query="Marlowe coolant loop"))["hits"]
            assert hits[0]["source"].endswith("log.pdf") and hits[0]["page"] == 2
            hits = (await call(client, "query_knowledge_hub", query="Quillon robots"))["hits"]
            assert hits[0]["source"].endswith("review.pptx") and hits[0]["page"] == 2

            summary = await call(client, "get_document_summary", source_hash=hit["source_hash"])
            (listed,) = summary["images"]
            assert listed["sha256"] == hit["image"] and listed["chunk_id"] == hit["chunk_id"]
            assert listed["described_by"] == "vision" and listed["description"] == CAPTIONS[FIGURE]
            assert (listed["width"], listed["height"]) == (320, 200)
            text = (
                await client.call_tool("get_document_summary", {"source_hash": hit["source_hash"]})
            ).content[0]
            assert "1 pictures: A bar chart of Zephyr" in text.text  # type: ignore[union-attr]

        # A new version of a document with the same picture: its caption is not asked again.
        word_with_figure(tmp_path / "docs" / "plant.docx", FIGURE, icon=False)
        before = len(llm.requests)
        async with serve(tmp_path, env=_vision_env(llm)) as client:
            await indexed(client, 3)
            hits = (await call(client, "query_knowledge_hub", query="Zephyr turbine output"))[
                "hits"
            ]
            assert hits[0]["image"]
        assert len(llm.requests) == before


async def test_a_vision_model_down_leaves_ocr_and_alt_text(tmp_path: Path) -> None:
    word_with_figure(
        tmp_path / "docs" / "screens.docx", text_png("Turbine blade inspection every 450 hours")
    )
    word_with_figure(tmp_path / "docs" / "photo.docx", shapes_png(5), alt="Night shift crew photo")
    with serve_llm(fail="500", times=None) as llm:
        async with serve(tmp_path, env=_vision_env(llm), stderr="server.log") as client:
            await indexed(client, 2)
            hits = (await call(client, "query_knowledge_hub", query="blade inspection hours"))[
                "hits"
            ]
            assert hits[0]["source"].endswith("screens.docx") and hits[0]["image"]
            assert "450 hours" in hits[0]["text"]
            hits = (await call(client, "query_knowledge_hub", query="night shift crew"))["hits"]
            assert hits[0]["text"] == "[Image: Night shift crew photo]"
            summary = await call(client, "get_document_summary", source_hash=hits[0]["source_hash"])
            assert [i["described_by"] for i in summary["images"]] == ["alt"]
        assert llm.requests  # it was asked, and failed: the run went on without it
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "pictures not captioned" in log
