"""The generated set of benchmarks/ocr.py: seeded pages of en/zh/ru text rendered clean and
"scanned", and a scanned-looking PDF rasterised back as knowhub would."""

from __future__ import annotations

import ctypes
import io
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

SEED = 20
LANGS = ("en", "zh", "ru")
FONTS = {
    "serif": "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "sans": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "cjk": "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
}
A4_INCHES = (8.27, 11.69)
PDF_SCAN_DPI, PDF_SIZE_PT = 300, 11

SENTENCES = {
    "en": [
        "Nightly backups of the production database are taken at 02:00 UTC and kept for 35"
        " days in two separate regions.",
        "Employees who travel for work may claim hotel costs of up to 180 euros per night,"
        " or 240 euros in capital cities.",
        "Before a release is tagged, the on-call engineer checks that every migration can be"
        " rolled back within ten minutes.",
        "Access to the finance share is granted by the team lead and reviewed every quarter;"
        " stale accounts are disabled after 90 days.",
        "The office on Harbour Street opens at 8:30 on weekdays; visitors sign in at the front"
        " desk and wear a badge at all times.",
        "Incident reports must name the affected service, the first alert, the time to"
        " recovery and one action that prevents a repeat.",
        "Laptops are encrypted with a key held by the IT department, so a lost device can be"
        " wiped remotely within the hour.",
        "New hires receive a checklist on their first day: set up two-factor login, read the"
        " security policy and meet their mentor.",
        "Invoices above 5,000 dollars need a second signature, and payment terms longer than"
        " 60 days require approval from finance.",
        "The search index is rebuilt every Sunday night, which takes about forty minutes for"
        " the full archive of 12,000 documents.",
        "Customer data may only be exported in anonymised form, and every export is logged"
        " with the name of the person who asked.",
        "Meeting rooms can be booked up to three weeks ahead; a booking that is not used"
        " within 15 minutes is released automatically.",
    ],
    "zh": [
        "生产数据库每天凌晨两点进行全量备份，备份文件在两个不同的地区保存三十五天。",
        "员工因公出差时，住宿费用每晚最高可以报销四百五十元，一线城市的标准为六百元。",
        "发布新版本之前，值班工程师需要确认每一个数据库迁移都能在十分钟内回滚。",
        "财务共享目录的访问权限由团队负责人审批，每个季度复查一次，九十天未使用的账号将被停用。",
        "公司办公室工作日早上八点半开门，访客需要在前台登记并全程佩戴访客证。",
        "事故报告必须写明受影响的服务、第一次告警的时间、恢复所用的时间以及防止再次发生的措施。",
        "笔记本电脑使用由信息技术部门保管的密钥加密，设备丢失后可以在一小时内远程清除数据。",
        "新员工入职第一天会收到一份清单：开启两步验证登录，阅读安全制度，并与导师见面。",
        "金额超过五万元的发票需要第二人签字，付款期限超过六十天的合同需要财务部批准。",
        "搜索索引在每个星期日晚上重建，处理一万两千份文档的完整归档大约需要四十分钟。",
        "使用 VPN 连接内网时，请先在手机 App 中完成身份验证。",
        "所有合同的 PDF 扫描件保存在共享盘的 2024 文件夹中，保留期为十年。",
    ],
    "ru": [
        "Ночные резервные копии рабочей базы данных создаются в 02:00 по UTC и хранятся"
        " 35 дней в двух разных регионах.",
        "Сотрудник в командировке может оплатить гостиницу за счёт компании до 6000 рублей"
        " за ночь, в Москве — до 9000 рублей.",
        "Перед выпуском новой версии дежурный инженер проверяет, что каждую миграцию можно"
        " откатить за десять минут.",
        "Доступ к финансовой папке выдаёт руководитель группы; права пересматриваются раз в"
        " квартал.",
        "Офис на Садовой улице открывается в половине девятого; посетители регистрируются на"
        " ресепшене и всё время носят пропуск.",
        "В отчёте об инциденте указывают затронутый сервис, время первого оповещения, время"
        " восстановления и меру, которая предотвратит повтор.",
        "Ноутбуки зашифрованы ключом, который хранится в отделе ИТ, поэтому потерянное"
        " устройство можно стереть удалённо в течение часа.",
        "В первый день новый сотрудник получает список дел: включить двухфакторный вход,"
        " прочитать политику безопасности и встретиться с наставником.",
        "Счета на сумму больше 500 000 рублей подписывают двое, а отсрочка платежа свыше"
        " 60 дней требует согласия финансового отдела.",
        "Поисковый индекс перестраивается каждое воскресенье вечером; архив из 12 000"
        " документов обрабатывается около сорока минут.",
        "Данные клиентов выгружаются только в обезличенном виде, и каждая выгрузка"
        " записывается в журнал.",
        "Для подключения к VPN используйте приложение AnyConnect и корпоративную учётную запись.",
    ],
}
PAGE_CHARS = {"en": 560, "zh": 260, "ru": 560}  # about a third of a dense A4 page at 10 pt


# --- the set ---------------------------------------------------------------------------------


@dataclass
class Page:
    """One page image to read, with the text it shows."""

    lang: str
    condition: str  # clean, scanned, pdf@<dpi>
    size_pt: int
    dpi: int
    truth: str
    image: np.ndarray = field(repr=False)  # greyscale uint8, height x width

    @property
    def name(self) -> str:
        return f"{self.lang}-{self.condition}-{self.size_pt}pt"


def page_texts(lang: str, count: int, rng: random.Random) -> list[str]:
    """``count`` pages of sentences in a seeded order, two paragraphs each (from the fifth
    page on, every page is the first again: the order turns by 3 of 12 sentences a page)."""
    pool = list(SENTENCES[lang])
    rng.shuffle(pool)
    return [one_page(lang, pool[index * 3 :] + pool[: index * 3]) for index in range(count)]


def one_page(lang: str, order: list[str]) -> str:
    """Sentences in ``order`` until the page is full, as two paragraphs."""
    joiner = "" if lang == "zh" else " "
    chosen: list[str] = []
    for sentence in order:
        if len(joiner.join(chosen)) >= PAGE_CHARS[lang]:
            break
        chosen.append(sentence)
    half = len(chosen) // 2
    return joiner.join(chosen[:half]) + "\n\n" + joiner.join(chosen[half:])


def font_path(lang: str, index: int) -> str:
    return FONTS["cjk"] if lang == "zh" else FONTS["serif" if index % 2 == 0 else "sans"]


def wrap(text: str, lang: str, fits: Callable[[str], bool]) -> list[str]:
    """Lines no wider than the page: at spaces, or anywhere in Chinese."""
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        units = list(paragraph) if lang == "zh" else paragraph.split(" ")
        glue = "" if lang == "zh" else " "
        line = ""
        for unit in units:
            candidate = line + glue + unit if line else unit
            if line and not fits(candidate):
                lines.append(line.strip())
                line = unit
            else:
                line = candidate
        lines.extend([line.strip(), ""])
    return lines


def render(text: str, lang: str, size_pt: int, dpi: int, font: str) -> np.ndarray:
    """Black text on a white A4 page with one-inch margins."""
    from PIL import Image, ImageDraw, ImageFont

    width, height = (round(side * dpi) for side in A4_INCHES)
    face = ImageFont.truetype(font, round(size_pt * dpi / 72))
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    line_px = round(size_pt * dpi / 72 * 1.4)
    lines = wrap(text, lang, lambda line: face.getlength(line) <= width - 2 * dpi)
    for row, line in enumerate(lines):
        draw.text((dpi, dpi + row * line_px), line, font=face, fill=0)
    return np.asarray(image)


def scan(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """What a cheap scanner does to a page: skew, blur, uneven grey paper, noise, specks, JPEG."""
    from PIL import Image, ImageFilter

    angle = float(rng.uniform(1.0, 2.0) * rng.choice([-1, 1]))
    page = Image.fromarray(image).rotate(angle, Image.Resampling.BICUBIC, fillcolor=255)
    page = page.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.8, 1.3))))
    pixels = np.asarray(page, dtype=np.float32) * 0.8 + 25  # grey paper, ink not quite black
    pixels *= np.linspace(1.0, rng.uniform(0.8, 0.9), pixels.shape[1])  # light falls off
    pixels += rng.normal(0, 16, pixels.shape)
    pixels[rng.random(pixels.shape) < 0.0005] = 40  # dust
    noisy = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    buffer = io.BytesIO()
    noisy.save(buffer, "JPEG", quality=int(rng.integers(35, 60)))
    return np.asarray(Image.open(buffer).convert("L"))


def image_set(pages: int, sizes: list[int], dpi: int) -> tuple[list[Page], dict[str, str]]:
    """Clean and scanned renderings of every page in every size; the PDF pages' truths."""
    rng, noise = random.Random(SEED), np.random.default_rng(SEED)
    out: list[Page] = []
    first: dict[str, str] = {}
    for lang in LANGS:
        for index, text in enumerate(page_texts(lang, pages, rng)):
            first.setdefault(lang, text)
            for size in sizes:
                clean = render(text, lang, size, dpi, font_path(lang, index))
                out.append(Page(lang, "clean", size, dpi, text, clean))
                out.append(Page(lang, "scanned", size, dpi, text, scan(clean, noise)))
    return out, first


def scanned_pdf(texts: dict[str, str]) -> bytes:
    """A PDF of scanned page images only (JPEG inside, no text layer), one page per language."""
    from PIL import Image

    noise = np.random.default_rng(SEED + 1)
    images = [
        Image.fromarray(
            scan(render(texts[lang], lang, PDF_SIZE_PT, PDF_SCAN_DPI, font_path(lang, 0)), noise)
        )
        for lang in LANGS
    ]
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", save_all=True, append_images=images[1:], resolution=PDF_SCAN_DPI)
    return buffer.getvalue()


def rasterise(pdf_bytes: bytes, dpi: int) -> tuple[list[np.ndarray], float]:
    """Each page as a greyscale array at ``dpi`` (pypdfium2, as knowhub renders pages), and
    the seconds per page it took."""
    import pypdfium2 as pdfium

    start = time.perf_counter()
    pdf = pdfium.PdfDocument(pdf_bytes)
    arrays = []
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            bitmap = page.render(scale=dpi / 72, grayscale=True)
            arrays.append(np.array(bitmap.to_numpy()).reshape(bitmap.height, bitmap.width, -1))
            page.close()
    finally:
        pdf.close()
    return [a[:, :, 0].copy() for a in arrays], (time.perf_counter() - start) / len(arrays)


# --- a page with no text layer ----------------------------------------------------------------


def text_layer(pdf_bytes: bytes) -> list[dict[str, float]]:
    """Per page: characters in its text layer, share of the page covered by images, and the
    milliseconds the two took: what a loader needs to decide that a page wants OCR."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(pdf_bytes)
    rows = []
    try:
        for index in range(len(pdf)):
            start = time.perf_counter()
            page = pdf[index]
            textpage = page.get_textpage()
            chars = textpage.count_chars()
            textpage.close()
            width, height = page.get_size()
            covered = 0.0
            for obj in page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=2):
                left, bottom, right, top = obj.get_bounds()
                covered += max(0.0, right - left) * max(0.0, top - bottom)
            page.close()
            ms = (time.perf_counter() - start) * 1000
            rows.append({"chars": chars, "image_cover": round(covered / (width * height), 3)})
            rows[-1]["ms"] = round(ms, 3)
    finally:
        pdf.close()
    return rows


def with_header(pdf_bytes: bytes, text: str) -> bytes:
    """The PDF with a one-line text object on its first page (a scanner's stamp or a page
    number): "almost no text layer"."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument(pdf_bytes)
    page = pdf[0]
    font = raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 9.0)
    wide = (text + "\0").encode("utf-16-le")
    raw.FPDFText_SetText(obj, ctypes.cast(ctypes.c_char_p(wide), raw.FPDF_WIDESTRING))
    raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 36, 20)
    raw.FPDFPage_InsertObject(page.raw, obj)
    raw.FPDFPage_GenerateContent(page.raw)
    raw.FPDFFont_Close(font)
    buffer = io.BytesIO()
    page.close()
    pdf.save(buffer)
    pdf.close()
    return buffer.getvalue()
