"""Screenshots against scans: how each Tesseract configuration reads them, and knowhub's OCR.

    python -m benchmarks.ocr_screens

A seeded, generated set: in English, Chinese and Russian, a table with cell borders and a
paragraph rendered as clean screenshots at 12, 14 and 18 px, and a page of text scanned as
``benchmarks/ocr_set.py`` scans (10 pt at 200 dpi). Each is read by Tesseract (tesserocr,
``eng+chi_sim+rus``) as the page is (psm 6 + Sauvola, the benchmark's choice for scans), with
Tesseract's defaults (psm 3 + Otsu) and sparse text (psm 11 + Otsu), each at the picture's
size and at twice it; and by knowhub's image loader (which picks its reading by the page's
background, upscales clean pictures and reads a page again with one script's models when
the first reading calls for it; docs/formats.md). CER as ``benchmarks/ocr.py`` counts it;
CPU seconds per image. Results: docs/decisions.md, "OCR of scanned PDFs and images".
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
from benchmarks.ocr import TESSDATA_DIRS, levenshtein, normalise
from benchmarks.ocr_set import FONTS, SENTENCES, font_path, render, scan
from PIL import Image, ImageDraw, ImageFont

TABLES = {
    "en": [
        ("Robot", "Battery", "Charge time"),
        ("Kestrel K2", "48 V / 40 Ah", "95 min"),
        ("Finch F1", "24 V / 20 Ah", "60 min"),
        ("Osprey OL-1000", "48 V / 80 Ah", "140 min"),
    ],
    "ru": [
        ("Модель", "Цена, руб.", "Гарантия"),
        ("Кестрел К2", "1 250 000", "24 месяца"),
        ("Финч Ф1", "640 000", "12 месяцев"),
    ],
    "zh": [
        ("型号", "价格", "保修"),
        ("红隼 K2", "十二万五千元", "二十四个月"),
        ("燕雀 F1", "六万四千元", "十二个月"),
    ],
}
CONFIGS = [(6, "2", 1), (6, "2", 2), (3, "0", 1), (3, "0", 2), (11, "0", 1), (11, "0", 2)]


def table(rows: list[tuple[str, ...]], px: int, font: str) -> Image.Image:
    face = ImageFont.truetype(font, px)
    widths = [max(face.getlength(r[i]) for r in rows) + 2 * px for i in range(len(rows[0]))]
    image = Image.new("L", (round(sum(widths)) + 20, 2 * px * len(rows) + 20), 255)
    draw = ImageDraw.Draw(image)
    for row_index, row in enumerate(rows):
        x, y = 10.0, 10 + row_index * 2 * px
        for cell, width in zip(row, widths, strict=True):
            draw.rectangle((x, y, x + width, y + 2 * px), outline=180)
            draw.text((x + px, y + px // 3), cell, font=face, fill=30)
            x += width
    return image


def paragraph(text: str, lang: str, px: int, font: str, width: int = 900) -> Image.Image:
    face = ImageFont.truetype(font, px)
    lines, line = [], ""
    for unit in list(text) if lang == "zh" else text.split(" "):
        candidate = line + ("" if lang == "zh" else " ") + unit if line else unit
        if line and face.getlength(candidate) > width - 40:
            lines.append(line)
            line = unit
        else:
            line = candidate
    lines.append(line)
    image = Image.new("L", (width, round(len(lines) * px * 1.5) + 40), 255)
    draw = ImageDraw.Draw(image)
    for index, text_line in enumerate(lines):
        draw.text((20, 20 + index * px * 1.5), text_line, font=face, fill=20)
    return image


def cases() -> list[tuple[str, str, Image.Image, str]]:
    out = []
    for px in (12, 14, 18):
        for lang in ("en", "ru", "zh"):
            font = FONTS["cjk"] if lang == "zh" else FONTS["sans"]
            rows = TABLES[lang]
            out.append(
                (f"{lang}-table-{px}", lang, table(rows, px, font), " ".join(map(" ".join, rows)))
            )
            joiner = "" if lang == "zh" else " "
            text = joiner.join(SENTENCES[lang][:3])
            out.append((f"{lang}-para-{px}", lang, paragraph(text, lang, px, font), text))
    noise = np.random.default_rng(1)
    for lang in ("en", "zh", "ru"):
        text = ("" if lang == "zh" else " ").join(SENTENCES[lang][:3])
        page = scan(render(text, lang, 10, 200, font_path(lang, 0)), noise)
        out.append((f"{lang}-scan", lang, Image.fromarray(page), text))
    return out


def cer(truth: str, read: str, lang: str) -> float:
    reference = normalise(truth, lang)
    return levenshtein(reference, normalise(read, lang)) / len(reference)


def main() -> None:
    import tesserocr

    from knowhub.ingest.loaders import load

    folder = next(str(d) for d in TESSDATA_DIRS if Path(d).is_dir())
    engines = {
        (psm, th): tesserocr.PyTessBaseAPI(
            path=folder, lang="eng+chi_sim+rus", psm=psm, variables={"thresholding_method": th}
        )
        for psm, th, _ in CONFIGS
    }
    head = [f"psm {p} {'Sauvola' if t == '2' else 'Otsu'} ×{u}" for p, t, u in CONFIGS]
    print("| image | " + " | ".join([*head, "knowhub"]) + " |")
    print("|---" * (len(head) + 2) + "|")
    for name, lang, image, truth in cases():
        cells = []
        for psm, th, up in CONFIGS:
            grey = image.resize((image.width * up, image.height * up), Image.Resampling.LANCZOS)
            api = engines[(psm, th)]
            api.SetImageBytes(grey.tobytes(), grey.width, grey.height, 1, grey.width)
            api.SetSourceResolution(300)
            start = time.process_time()
            read = api.GetUTF8Text()
            cells.append(
                f"{cer(truth, read, lang) * 100:.1f} % ({time.process_time() - start:.2f} s)"
            )
        png = io.BytesIO()
        image.save(png, "PNG")
        start = time.process_time()
        read = load(Path(f"{name}.png"), png.getvalue()).text
        cells.append(f"{cer(truth, read, lang) * 100:.1f} % ({time.process_time() - start:.2f} s)")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
