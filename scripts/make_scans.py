#!/usr/bin/env python3
"""Generate the scanned documents of the bundled example corpus, which knowhub reads by OCR.

Writes, under ``examples/docs/``:

* ``en/site-rules-scan.pdf``  a two-page memo, printed and scanned: page images only (JPEG,
  no text layer), with a scanner's skew, blur, grey paper and noise (as
  ``benchmarks/ocr_set.py`` makes its scans)
* ``zh/班车时刻表.png``        a screenshot of a notice with a timetable (clean, small text)

The output is deterministic (seeded noise, fixed PDF dates), so running the script twice
yields the same bytes for a given Pillow/numpy version:

    .venv/bin/python scripts/make_scans.py            # write the files
    .venv/bin/python scripts/make_scans.py --check    # fail if committed files differ
"""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

# Run as a script, this folder is on sys.path: one write-or-check loop for every example.
from make_examples import write_targets
from PIL import Image, ImageDraw, ImageFilter, ImageFont

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "examples" / "docs"
sys.path.insert(0, str(ROOT))
from benchmarks.ocr_set import FONTS, render  # noqa: E402  (the repository's own module)

SEED = 2024
DPI = 150  # the scan's resolution: small files; OCR reads 150 and 300 dpi alike
FIXED_DATE = datetime(2024, 10, 1, 9, 0, 0, tzinfo=UTC)

MEMO = [
    "NORTHWIND ROBOTICS - HARBOUR STREET SITE\n\n"
    "Memo 2024-07: visitors and contractors\n\n"
    "All visitors sign in at reception in Building A and receive a red visitor badge, which "
    "is worn visibly and handed back when they leave. The employee who invited a visitor "
    "escorts them at all times. Nobody without a yellow safety induction sticker may enter "
    "Hall 4 while robots are running.\n\n"
    "Contractors who work at height or on electrical equipment need a work permit from the "
    "facilities manager, Olga Brandt (extension 7240), issued no later than the day before "
    "the work starts.",
    "Deliveries and collections\n\n"
    "Goods are received at loading bay 3 on weekdays between 07:30 and 14:30. Drivers report "
    "to the gatehouse first; a delivery arriving after 14:30 is turned away and must be "
    "booked again. Pallets may be at most 1.6 metres high and weigh at most 1,000 kg; a "
    "heavier load needs the forklift booked 48 hours ahead.\n\n"
    "Robots returned for repair are collected by the courier on Tuesdays and Thursdays at "
    "11:00 from the same loading bay.",
]

NOTICE_TITLE = "北风机器人深圳分公司员工班车时刻表（2024年9月起）"
NOTICE_TOP = (
    "自9月2日起，公司开通两条员工班车线路，工作日运行，法定节假日停运。",
    "乘车时请出示工牌，班车不收取任何费用。",
)
TIMETABLE = [
    ("线路", "上车地点", "发车时间", "到达公司"),
    ("1号线", "深圳北站B出口", "07:50", "08:40"),
    ("2号线", "宝安中心地铁站", "08:00", "08:35"),
    ("返程", "公司正门", "18:15", "—"),
]
NOTICE_BOTTOM = (
    "班车满员后不再上客，请提前十分钟到站。",
    "如有疑问，请联系行政部王敏（分机8016）。",
)


def scanned(page: np.ndarray, rng: np.random.Generator) -> Image.Image:
    """A cheap scanner's page: skewed, blurred, on grey paper lit unevenly, noisy, dusty.

    Milder noise than benchmarks/ocr_set.py's (4 against 16), which JPEG keeps small: the
    demo's files stay small, and OCR read that set's scans as well as clean pages.
    """
    angle = float(rng.uniform(0.8, 1.5) * rng.choice([-1, 1]))
    image = Image.fromarray(page).rotate(angle, Image.Resampling.BICUBIC, fillcolor=255)
    image = image.filter(ImageFilter.GaussianBlur(0.7))
    pixels = np.asarray(image, dtype=np.float32) * 0.82 + 30
    pixels *= np.linspace(1.0, 0.88, pixels.shape[1])  # light falls off across the glass
    pixels += rng.normal(0, 4, pixels.shape)
    pixels[rng.random(pixels.shape) < 0.0003] = 60  # dust
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def make_memo_pdf() -> bytes:
    rng = np.random.default_rng(SEED)
    pages = [scanned(render(text, "en", 12, DPI, FONTS["serif"]), rng) for text in MEMO]
    buffer = io.BytesIO()
    pages[0].save(
        buffer,
        "PDF",
        save_all=True,
        append_images=pages[1:],
        resolution=DPI,
        quality=35,  # Pillow stores a grey page as a JPEG (DCTDecode)
        producer="scripts/make_scans.py",
        creationDate=FIXED_DATE.utctimetuple(),
        modDate=FIXED_DATE.utctimetuple(),
    )
    return buffer.getvalue()


def make_notice_png() -> bytes:
    face = ImageFont.truetype(FONTS["cjk"], 20)
    bold = ImageFont.truetype(FONTS["cjk"], 24)
    widths = [90, 220, 130, 130]
    image = Image.new("L", (720, 480), 255)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 720, 56), fill=235)  # the app's title bar
    draw.text((20, 14), NOTICE_TITLE, font=bold, fill=20)
    y = 76
    for line in NOTICE_TOP:
        draw.text((20, y), line, font=face, fill=40)
        y += 34
    y += 10
    for row in TIMETABLE:
        x = 20
        for cell, width in zip(row, widths, strict=True):
            draw.rectangle((x, y, x + width, y + 40), outline=170)
            draw.text((x + 10, y + 8), cell, font=face, fill=20)
            x += width
        y += 40
    y += 20
    for line in NOTICE_BOTTOM:
        draw.text((20, y), line, font=face, fill=40)
        y += 34
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


TARGETS = {
    "en/site-rules-scan.pdf": make_memo_pdf,
    "zh/班车时刻表.png": make_notice_png,
}


def main(argv: list[str] | None = None) -> int:
    return write_targets(TARGETS, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
