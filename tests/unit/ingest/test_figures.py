"""Pictures inside documents: what is kept, how it is described, where its block goes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.common import Limits
from knowhub.ingest.loaders.figures import CaptionError, Figures, ImageOptions
from knowhub.ingest.loaders.ocr import Ocr, OcrOptions
from knowhub.providers.images import ImageStore
from tests.pictures_helpers import (
    deck_with_picture,
    pdf_with_picture,
    png,
    shapes_png,
    text_png,
    word_with_figure,
)


def _figures(tmp_path: Path, ocr: bool = False, **options: object) -> Figures:
    store = ImageStore(tmp_path / "images")
    return Figures(
        tmp_path / "doc.docx",
        ImageOptions(store, **options),  # type: ignore[arg-type]
        Ocr(OcrOptions(enabled=ocr, max_pixels=4_000_000)),
    )


def _encoded(picture: Image.Image, kind: str) -> bytes:
    out = io.BytesIO()
    picture.save(out, kind)
    return out.getvalue()


def _limits(tmp_path: Path, caption: object = None, ocr: bool = False) -> Limits:
    images = ImageOptions(ImageStore(tmp_path / "images"), caption=caption)  # type: ignore[arg-type]
    return Limits(ocr=OcrOptions(enabled=ocr), images=images)


def test_icons_repeats_and_unreadable_pictures_are_passed_over(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    icon = png(Image.new("RGB", (40, 300), "red"))  # narrower than min_side (64)
    assert figures.add(icon, None, "icon") == ""
    assert figures.add(b"not a picture at all", None, "junk") == ""
    assert figures.add(shapes_png(1), None, "A chart") == "[Image: A chart]"
    assert figures.add(shapes_png(1), None, "The same chart again") == ""
    assert [i.description for i in figures.images("[Image: A chart]")] == ["A chart"]
    assert len(list((tmp_path / "images").rglob("*.png"))) == 1


def test_pictures_past_the_limit_are_not_kept_and_the_document_says_so(tmp_path: Path) -> None:
    figures = _figures(tmp_path, max_per_document=2)
    blocks = [figures.add(shapes_png(seed), 3, f"figure {seed}") for seed in range(5)]
    assert blocks == ["[Image: figure 0]", "[Image: figure 1]", "", "", ""]
    (note,) = figures.notes()
    assert "3 more pictures not kept" in note and "max_per_document (2)" in note


def test_a_picture_over_the_pixel_limit_is_not_decoded(tmp_path: Path) -> None:
    figures = _figures(tmp_path)  # 4 megapixels at most
    huge = _encoded(Image.new("L", (2500, 2000), 255), "PNG")
    assert figures.add(huge, None, "a poster") == ""
    assert not list((tmp_path / "images").rglob("*.png"))


def test_what_chat_apis_take_is_kept_as_it_came_the_rest_as_png(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    photo = _encoded(shapes_picture := Image.open(io.BytesIO(shapes_png(2))), "JPEG")
    figures.add(photo, None, "photo")
    figures.add(_encoded(shapes_picture.rotate(90, expand=True), "BMP"), None, "bitmap")
    wide = _encoded(Image.new("RGB", (3000, 400), "navy"), "PNG")
    figures.add(wide, None, "banner")
    jpeg, bmp, banner = figures.images("")
    store = ImageStore(tmp_path / "images")
    assert store.get(jpeg.sha256) == (photo, "image/jpeg")
    assert bmp.mime == "image/png" and (bmp.width, bmp.height) == (200, 320)
    assert (banner.width, banner.height) == (2048, 273)  # kept at most 2048 wide


def test_ocr_describes_a_picture_with_words_and_not_one_without(tmp_path: Path) -> None:
    figures = _figures(tmp_path, ocr=True)
    words = figures.add(text_png("Pump pressure must stay under 6 bar"), None, "")
    assert "Pump pressure" in words and "6 bar" in words
    assert figures.add(shapes_png(3), None, "") == ""  # shapes: OCR noise is no description
    assert figures.add(shapes_png(4), None, "Site map") == "[Image: Site map]"
    assert [i.described_by for i in figures.images(words)] == ["ocr", "", "alt"]


def test_a_failing_captioner_falls_back_and_warns_once(tmp_path: Path) -> None:
    def broken(sha: str, data: bytes, mime: str) -> str:
        raise CaptionError("vision-model: 500 from the server")

    figures = _figures(tmp_path, caption=broken)
    assert figures.add(shapes_png(1), None, "Org chart") == "[Image: Org chart]"
    assert figures.add(shapes_png(2), None, "Floor plan") == "[Image: Floor plan]"
    (warning,) = figures.notes()
    assert "pictures not captioned: vision-model: 500" in warning


def test_the_captioner_gets_the_kept_bytes_and_its_caption_is_the_block(tmp_path: Path) -> None:
    seen: list[tuple[str, bytes, str]] = []

    def caption(sha: str, data: bytes, mime: str) -> str:
        seen.append((sha, data, mime))
        return "A pie chart.\n\nThree slices."

    figures = _figures(tmp_path, caption=caption)
    block = figures.add(shapes_png(7), None, "alt text loses")
    assert block == "[Image: A pie chart. Three slices.]"  # one line: one paragraph, one chunk
    ((sha, data, mime),) = seen
    assert data == shapes_png(7) and mime == "image/png"
    assert ImageStore(tmp_path / "images").get(sha) == (data, mime)


def test_a_word_figure_is_a_chunk_of_its_own_between_its_paragraphs(tmp_path: Path) -> None:
    word_with_figure(tmp_path / "plant.docx", shapes_png(1), alt="Turbine output chart")
    document = load(tmp_path / "plant.docx", limits=_limits(tmp_path))
    (image,) = document.images
    assert document.text[image.start : image.end] == "[Image: Turbine output chart]"
    chunks = chunk_document(document, "f" * 64, ChunkingOptions(size=800, overlap=0))
    texts = [c.text for c in chunks]
    assert texts[1] == "[Image: Turbine output chart]"
    assert "three shifts" in texts[0] and "plant manager" in texts[2]
    assert [c.metadata.get("image") for c in chunks] == [None, image.sha256, None]


def test_a_slide_picture_is_on_its_slide_and_a_pdf_picture_ends_its_page(tmp_path: Path) -> None:
    deck_with_picture(tmp_path / "deck.pptx", shapes_png(2))
    pdf_with_picture(tmp_path / "log.pdf", shapes_png(3))

    def caption(sha: str, data: bytes, mime: str) -> str:
        return f"picture of {len(data)} bytes"

    deck = load(tmp_path / "deck.pptx", limits=_limits(tmp_path, caption))
    (slide_picture,) = deck.images
    assert slide_picture.page == 2 and slide_picture.start is not None
    assert slide_picture.start > deck.page_starts[1]
    pdf = load(tmp_path / "log.pdf", limits=_limits(tmp_path, caption))
    (pdf_picture,) = pdf.images
    assert pdf_picture.page == 2 and pdf.text.endswith(pdf.text[pdf_picture.start :])
    chunks = chunk_document(pdf, "e" * 64, ChunkingOptions())
    (described,) = [c for c in chunks if c.metadata.get("image")]
    assert described.page == 2 and described.text.startswith("[Image: picture of")


def test_without_an_image_store_nothing_changes(tmp_path: Path) -> None:
    word_with_figure(tmp_path / "plant.docx", shapes_png(1), alt="Turbine output chart")
    document = load(tmp_path / "plant.docx")
    assert document.images == () and "[Image" not in document.text


@pytest.mark.parametrize("bad", ["not-hex", "A" * 64, "0" * 63])
def test_the_store_finds_only_hashes(tmp_path: Path, bad: str) -> None:
    store = ImageStore(tmp_path)
    store.put(shapes_png(1), "png")
    assert store.find(bad) is None and store.get(bad) is None


def test_the_store_keeps_a_picture_once_and_scales_one_down_to_fit(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    noisy = Image.effect_noise((1600, 1200), 80).convert("RGB")
    data = _encoded(noisy, "PNG")
    sha = store.put(data, "png")
    assert store.put(data, "png") == sha
    assert len(list(tmp_path.rglob("*"))) == 2  # its folder and the file: no temporaries
    assert store.bounded(sha, len(data), 4096) == (data, "image/png")
    smaller, mime = store.bounded(sha, 300_000, 1024) or (b"", "")
    assert mime == "image/png" and len(smaller) <= 300_000
    with Image.open(io.BytesIO(smaller)) as picture:
        assert max(picture.size) <= 1024
    assert store.bounded(sha, 100, 1024) is None  # cannot be made that small


def test_notes_are_kept_by_key_and_bad_names_refused(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    sha = store.put(shapes_png(1), "png")
    assert store.note(sha, "caption-abc") is None
    store.keep_note(sha, "caption-abc", "A chart.")
    assert store.note(sha, "caption-abc") == "A chart."
    with pytest.raises(ValueError, match="bad image note name"):
        store.keep_note(sha, "../../etc", "x")


def test_a_truncated_picture_is_not_kept_so_it_never_breaks_a_result(tmp_path: Path) -> None:
    whole = _encoded(Image.effect_noise((600, 600), 60).convert("RGB"), "PNG")
    figures = _figures(tmp_path)
    assert figures.add(whole[: len(whole) // 2], None, "half a photo") == ""
    assert not list((tmp_path / "images").rglob("*.png"))


def test_a_damaged_kept_picture_is_left_out_not_raised(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    data = _encoded(Image.effect_noise((600, 600), 60).convert("RGB"), "PNG")
    sha = store.put(data, "png")
    found = store.find(sha)
    assert found is not None
    found.write_bytes(data[: len(data) // 2])  # damaged on disk, or planted by a bundle
    assert store.bounded(sha, 1000, 256) is None


def test_a_captions_markdown_headings_stay_inside_its_block(tmp_path: Path) -> None:
    def caption(sha: str, data: bytes, mime: str) -> str:
        return "### Description\nA bar chart.\n\n### Labels\n- Q2: 75 MW"

    word_with_figure(tmp_path / "plant.docx", shapes_png(1))
    document = load(tmp_path / "plant.docx", limits=_limits(tmp_path, caption))
    assert [h.title for h in document.headings] == ["Plant report"]
    chunks = chunk_document(document, "f" * 64, ChunkingOptions(size=800, overlap=0))
    (described,) = [c for c in chunks if "Q2: 75 MW" in c.text]
    assert described.metadata["image"] and described.section_path == "Plant report"


def test_every_piece_of_a_long_description_names_its_picture(tmp_path: Path) -> None:
    def caption(sha: str, data: bytes, mime: str) -> str:
        return " ".join(f"Row {n} of the output table reads {n * 7} units." for n in range(60))

    word_with_figure(tmp_path / "plant.docx", shapes_png(1))
    document = load(tmp_path / "plant.docx", limits=_limits(tmp_path, caption))
    chunks = chunk_document(document, "f" * 64, ChunkingOptions(size=400, overlap=50))
    pieces = [c for c in chunks if "output table" in c.text]
    assert len(pieces) > 2 and all(c.metadata.get("image") for c in pieces)
    assert not any(c.metadata.get("image") for c in chunks if "plant manager" in c.text)


def test_a_pdfs_repeated_image_stream_is_decoded_once(tmp_path: Path) -> None:
    import pypdfium2 as pdfium
    from fpdf import FPDF

    from knowhub.ingest.loaders.figures import page_pictures

    pdf = FPDF()
    for _ in range(4):
        pdf.add_page()
        pdf.image(io.BytesIO(shapes_png(8)), x=20, y=20, w=80)  # a letterhead on every page
    document = pdfium.PdfDocument(bytes(pdf.output()))
    figures = _figures(tmp_path)
    try:
        decoded = [len(page_pictures(document[n], figures)) for n in range(4)]
    finally:
        document.close()
    assert decoded == [1, 0, 0, 0]
