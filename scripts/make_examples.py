#!/usr/bin/env python3
"""Generate the binary documents of the bundled example corpus.

Writes, under ``examples/docs/``:

* ``en/onboarding.pdf``          (fpdf2, 3 pages, core Helvetica font, English only)
* ``en/security-handbook.docx``  (python-docx, Title / Heading 1 / Heading 2, one table, a
  site plan as a picture: its words only in the picture)
* ``en/roadmap.pptx``            (python-pptx, 4 slides)
* ``zh/after-sales-service.docx`` (python-docx, Chinese, Heading 1 / Heading 2, one table)
* ``ru/prais-list.xlsx``         (openpyxl, two sheets)

The text documents (Markdown, TXT, HTML, CSV, JSON) are written by hand and are
not touched by this script.

The output is deterministic: document metadata carries fixed dates, and the
OOXML zip containers are rewritten with fixed member timestamps, so running the
script twice yields byte-identical files (for a given library/zlib version).

Usage::

    .venv/bin/python scripts/make_examples.py            # write the files
    .venv/bin/python scripts/make_examples.py --check    # fail if committed files differ
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from docx import Document
from docx.shared import Inches as DocxInches
from docx.shared import Pt
from fpdf import FPDF
from openpyxl import Workbook
from openpyxl.styles import Font
from PIL import Image, ImageDraw, ImageFont
from pptx import Presentation
from pptx.util import Inches
from pptx.util import Pt as PptPt

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "examples" / "docs"

FIXED_DT = datetime(2024, 10, 1, 9, 0, 0)  # naive; python-docx/pptx/openpyxl treat it as UTC
FIXED_DT_UTC = FIXED_DT.replace(tzinfo=UTC)
FIXED_ZIP_TIME = (2024, 10, 1, 9, 0, 0)
FIXED_W3CDTF = "2024-10-01T09:00:00Z"
AUTHOR = "Northwind Robotics (fictional)"
SANS_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core (make test)


# --------------------------------------------------------------------------- helpers


def normalize_ooxml(data: bytes) -> bytes:
    """Rewrite an OOXML zip with fixed timestamps and fixed core-property dates."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            blob = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                text = blob.decode("utf-8")
                text = re.sub(
                    r"(<dcterms:(?:created|modified)[^>]*>)[^<]*(</dcterms:)",
                    lambda m: m.group(1) + FIXED_W3CDTF + m.group(2),
                    text,
                )
                blob = text.encode("utf-8")
            zi = zipfile.ZipInfo(info.filename, date_time=FIXED_ZIP_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            dst.writestr(zi, blob)
    return out.getvalue()


def save_ooxml(doc) -> bytes:
    buf = io.BytesIO()
    doc.save(buf)
    return normalize_ooxml(buf.getvalue())


def set_core(props, title: str, subject: str, language: str | None = None) -> None:
    props.title = title
    props.subject = subject
    props.author = AUTHOR
    props.last_modified_by = AUTHOR
    props.created = FIXED_DT
    props.modified = FIXED_DT
    props.revision = 1
    if language and hasattr(props, "language"):
        props.language = language


# --------------------------------------------------------------------------- onboarding.pdf

ONBOARDING_PAGES = [
    (
        "New employee onboarding - Week one",
        [
            ("Welcome to Northwind Robotics",
             "This booklet walks you through your first weeks at Northwind Robotics. It applies to "
             "all new employees at the Rotterdam headquarters. Keep it handy: most of the "
             "questions new colleagues ask in their first month are answered here."),
            ("Your first day",
             "Arrive at 09:00 at the reception desk in Building C, Marconistraat 14. Bring a photo "
             "ID; reception prints your access badge on the spot. Your laptop is prepared in advance "
             "through an IT ticket of type IT-ONBOARD that your manager opened before your start "
             "date. If the laptop is not ready, the help desk will lend you a spare one for up to "
             "five working days."),
            ("Your onboarding buddy",
             "Every new hire is paired with a buddy from a neighbouring team for the first 90 days. "
             "The buddy is not your manager: ask them anything, from where the test floor is to how "
             "the coffee machine in the canteen works. Buddies and new hires get a lunch budget of "
             "EUR 25 per person once a month during the buddy period."),
        ],
    ),
    (
        "Safety training and the test floor",
        [
            ("Robot safety level 1",
             "Before you may enter the test floor in Hall 4, you must complete the e-learning course "
             "Robot Safety Level 1 and pass its quiz with a score of at least 85 percent. The course "
             "takes about three hours and must be finished within 10 working days of your start "
             "date. Until then your badge does not open the doors of Hall 4, even if your role "
             "requires you to be there."),
            ("Personal protective equipment",
             "Safety shoes are mandatory in Hall 4 and in the warehouse demo area. The company "
             "reimburses up to EUR 150 for safety shoes every two years; submit the receipt through "
             "the expense tool under the category PPE. High-visibility vests and safety glasses are "
             "available free of charge at the entrance of Hall 4."),
            ("Working near moving robots",
             "Never step into a marked robot lane while a Kestrel or Osprey robot is moving in it. "
             "Use the pedestrian crossings, which make robots stop at a distance of 1.2 metres. To "
             "stop a robot in an emergency, press the red button on its rear panel; the robot then "
             "needs to be released from the Fleetdeck console by a trained operator."),
        ],
    ),
    (
        "Practical matters and contacts",
        [
            ("Probation and reviews",
             "The probation period is four months. Your manager holds a short check-in at the end of "
             "your first month and a formal probation review on or around day 100. Objectives for "
             "the rest of the year are agreed at the probation review."),
            ("Pay and time registration",
             "Salaries are paid on the 25th of each month. Overtime, on-call shifts and travel days "
             "must be registered in the time system before the 20th of the month to be included in "
             "that month's salary; later entries move to the next month."),
            ("Useful contacts",
             "IT help desk: internal extension 4357 or helpdesk@northwind-robotics.example. "
             "Facilities and badges: extension 4100. Security incidents: report immediately as "
             "described in the Security handbook. HR questions: people@northwind-robotics.example. "
             "Canteen opening hours: 11:30 to 14:00 on working days."),
        ],
    ),
]


def make_onboarding_pdf() -> bytes:
    pdf = FPDF(format="A4")
    pdf.set_compression(False)  # plain content streams: stable bytes, easy to inspect
    pdf.set_creation_date(FIXED_DT_UTC)
    pdf.set_title("New employee onboarding")
    pdf.set_author(AUTHOR)
    pdf.set_creator("scripts/make_examples.py")
    pdf.set_producer("fpdf2")
    pdf.set_lang("en")
    pdf.set_auto_page_break(auto=True, margin=20)
    for page_no, (title, sections) in enumerate(ONBOARDING_PAGES, start=1):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 18)
        pdf.multi_cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
        for heading, body in sections:
            pdf.set_font("Helvetica", "B", 13)
            pdf.multi_cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
        pdf.set_auto_page_break(auto=False)  # the footer sits inside the bottom margin
        pdf.set_y(-15)
        pdf.set_font("Helvetica", "I", 9)
        pdf.cell(0, 8, f"Northwind Robotics onboarding - page {page_no} of {len(ONBOARDING_PAGES)}",
                 align="C")
        pdf.set_auto_page_break(auto=True, margin=20)
    return bytes(pdf.output())


# --------------------------------------------------------------------------- security-handbook.docx


def make_security_docx() -> bytes:
    doc = Document()
    set_core(doc.core_properties, "Security handbook", "Information security rules", "en-US")
    doc.add_paragraph("Northwind Robotics Security Handbook", style="Title")
    doc.add_paragraph(
        "These rules apply to every employee, contractor and intern who uses Northwind Robotics "
        "systems, including laptops, the Fleetdeck demo servers and robots on the test floor. "
        "Version 2.4, owned by the Information Security team."
    )

    doc.add_heading("Access control", level=1)
    doc.add_heading("Passwords and multi-factor authentication", level=2)
    doc.add_paragraph(
        "Passwords must be at least 14 characters long and must not be reused across systems. "
        "Use the company password manager to generate and store them. A hardware security key is "
        "required for access to production systems, source code and customer data; the key is "
        "issued by the IT help desk on your first day and a lost key must be reported within "
        "4 hours so that it can be revoked."
    )
    doc.add_heading("Access reviews", level=2)
    doc.add_paragraph(
        "Team leads review who has access to their systems every quarter. Access that is not "
        "confirmed within 10 working days of the review request is removed automatically. "
        "Accounts of people who leave the company are disabled on their last working day at 18:00."
    )

    doc.add_heading("Devices", level=1)
    doc.add_heading("Laptops", level=2)
    doc.add_paragraph(
        "Laptops must use full-disk encryption and lock the screen after 5 minutes of inactivity. "
        "Operating system updates must be installed within 7 days of release. Never leave a "
        "laptop unattended in a car, even in the boot."
    )
    doc.add_heading("Robots and test equipment", level=2)
    doc.add_paragraph(
        "Robots on the test floor are production-like devices. Do not connect them to guest Wi-Fi "
        "or to personal hotspots. Service ports on robots may only be opened with a service "
        "laptop registered in the asset inventory, and every session is logged."
    )

    doc.add_heading("Data classification", level=1)
    doc.add_paragraph(
        "All information belongs to one of four classes: Public, Internal, Confidential and "
        "Restricted. Customer site maps, robot telemetry and price quotes are Confidential. "
        "Personal data of employees and customer credentials are Restricted."
    )
    doc.add_heading("Handling Restricted data", level=2)
    doc.add_paragraph(
        "Restricted data must be encrypted with AES-256 at rest and in transit, may only be "
        "shared through the approved file exchange, and must never be copied to USB sticks or "
        "other removable media. Printed Restricted documents are shredded, not recycled."
    )

    doc.add_heading("Incident response", level=1)
    doc.add_heading("Reporting an incident", level=2)
    doc.add_paragraph(
        "If you suspect a security incident - a lost laptop, a phishing e-mail you clicked, a "
        "robot behaving as if someone else controls it - report it within 1 hour to "
        "security@northwind-robotics.example or call the security hotline on internal "
        "extension 7110, which is staffed around the clock. Do not try to investigate on your "
        "own and do not switch off affected machines unless told to."
    )
    doc.add_heading("Severity levels", level=2)
    doc.add_paragraph("The security team assigns a severity and responds within the target times below.")
    rows = [
        ("Severity", "Example", "Target response", "Who is informed"),
        ("SEV1", "Customer data exposed, or a robot fleet controlled by an attacker",
         "15 minutes", "CEO, CTO and affected customers within 24 hours"),
        ("SEV2", "Compromised employee account or malware on a laptop",
         "1 hour", "CTO and the employee's manager"),
        ("SEV3", "Phishing e-mail reported, no click",
         "Next business day", "Security team only"),
    ]
    table = doc.add_table(rows=len(rows), cols=len(rows[0]))
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            cell = table.cell(r, c)
            cell.text = value
            if r == 0:
                for run in cell.paragraphs[0].runs:
                    run.bold = True
    doc.add_heading("After an incident", level=2)
    doc.add_paragraph(
        "Every SEV1 and SEV2 incident gets a blameless post-incident review within 10 working days. "
        "Action items from the review are tracked in the SEC project until they are closed."
    )

    doc.add_heading("Fire safety", level=1)
    doc.add_paragraph(
        "When the fire alarm sounds, leave by the nearest exit and go to your building's "
        "assembly point, shown on the site plan below. Fire wardens wear orange vests."
    )
    doc.add_picture(io.BytesIO(make_assembly_plan()), width=DocxInches(5.5))
    for p in doc.paragraphs:
        for run in p.runs:
            if run.font.size is None and p.style.name == "Normal":
                run.font.size = Pt(11)
    return save_ooxml(doc)


def make_assembly_plan() -> bytes:
    """The handbook's figure: a site plan whose words only the picture holds (OCR reads them)."""
    face = ImageFont.truetype(SANS_FONT, 26)
    image = Image.new("L", (900, 420), 255)
    draw = ImageDraw.Draw(image)
    draw.text((30, 20), "Fire assembly points - Harbour Street site", font=face, fill=0)
    plan = [
        ((30, 90, 300, 220), "Building A", "Assembly point 1: staff car park"),
        ((330, 90, 600, 220), "Hall 4", "Assembly point 2: north lawn by the flagpole"),
    ]
    for index, (box, name, point) in enumerate(plan):
        draw.rectangle(box, outline=0, width=3)
        draw.text((box[0] + 20, box[1] + 50), name, font=face, fill=0)
        draw.text((30, 260 + 50 * index), f"{name}: {point}", font=face, fill=0)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


# --------------------------------------------------------------------------- roadmap.pptx

ROADMAP_SLIDES = [
    ("2025 product roadmap", None,
     "Northwind Robotics - product management\nInternal, Confidential\nStatus: October 2024"),
    ("First half of 2025", [
        "Fleetdeck 5.0 ships in May 2025: multi-site federation lets one console manage several "
        "warehouses; REST API v1 is removed as announced in the 4.3 release notes",
        "Kestrel AMR-200 battery upgrade from 1.2 kWh to 1.6 kWh, adding about 3 hours of runtime; "
        "existing robots can be retrofitted at the service centres",
        "Wren Dock WD-2 fast charging certified for the Finch Tote FT-40",
    ], None),
    ("Second half of 2025", [
        "Heron Arm H10 gets built-in force-torque sensing for assembly tasks",
        "Osprey Lift OL-1000 outdoor pilot with 3 customers in Q3, limited to dry weather",
        "Fleetdeck mobile app for supervisors (read-only) in Q4",
    ], None),
    ("Risks and dependencies", [
        "Lidar sensors: supplier lead time has grown to 22 weeks; we keep a safety stock "
        "of 400 units and qualify a second supplier by March 2025",
        "Fleetdeck 5.0 depends on customers migrating integrations to API v2; about 30% "
        "of active sites still call API v1",
        "Battery cells for the 1.6 kWh pack require new transport certification (UN 38.3)",
    ], None),
]


def make_roadmap_pptx() -> bytes:
    prs = Presentation()
    prs.slide_width = Inches(13.333)
    prs.slide_height = Inches(7.5)
    set_core(prs.core_properties, "2025 product roadmap", "Product roadmap", "en-US")
    for title, bullets, subtitle in ROADMAP_SLIDES:
        if bullets is None:
            slide = prs.slides.add_slide(prs.slide_layouts[0])
            slide.shapes.title.text = title
            slide.placeholders[1].text = subtitle
            continue
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1]
        body.left, body.top = Inches(0.7), Inches(1.6)
        body.width, body.height = Inches(12.0), Inches(5.4)
        tf = body.text_frame
        for i, text in enumerate(bullets):
            para = tf.paragraphs[0] if i == 0 else tf.add_paragraph()
            para.text = text
            para.font.size = PptPt(22)
        slide.notes_slide.notes_text_frame.text = (
            "Dates are targets, not commitments. Do not share this slide outside the company."
        )
    return save_ooxml(prs)


# --------------------------------------------------------------------------- zh/after-sales-service.docx


def make_after_sales_docx() -> bytes:
    doc = Document()
    set_core(doc.core_properties, "售后服务指南", "北风机器人售后服务", "zh-CN")
    doc.add_paragraph("北风机器人售后服务指南", style="Title")
    doc.add_paragraph(
        "本指南说明北风机器人（Northwind Robotics）在中国大陆地区提供的售后服务内容、服务等级和返修流程，"
        "适用于 Kestrel、Finch、Osprey 移动机器人，Heron 机械臂以及 Wren 充电桩。"
    )

    doc.add_heading("服务等级", level=1)
    doc.add_paragraph(
        "客户可在标准服务和金牌服务之间选择。标准服务随设备免费提供，保修期内有效；"
        "金牌服务按年购买，费用为设备清单价格的 7%。"
    )
    rows = [
        ("项目", "标准服务", "金牌服务"),
        ("远程响应时间", "48 小时内", "4 小时内（7×24）"),
        ("工程师到场时间", "5 个工作日内", "一线城市次日，其他城市 48 小时内"),
        ("备件发货", "常规物流", "次日达，深圳仓直发"),
        ("年度预防性维护", "不含", "每年 2 次"),
        ("备用机", "不含", "维修超过 10 个工作日时提供"),
    ]
    table = doc.add_table(rows=len(rows), cols=3)
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value

    doc.add_heading("返修流程", level=1)
    doc.add_heading("申请返修", level=2)
    doc.add_paragraph(
        "在客户门户提交返修申请，填写设备序列号并上传 Fleetdeck 诊断包。审核通过后，"
        "系统会生成以 NW-RMA- 开头的返修单号，请将单号写在包装箱外侧。"
    )
    doc.add_heading("寄送与维修", level=2)
    doc.add_paragraph(
        "设备须寄往深圳维修中心（深圳市南山区，示例地址）。寄送前请将电池电量放至 30% 以下，"
        "并使用原包装或同等强度的木箱。维修中心收到设备后，标准维修周期为 10 个工作日；"
        "需要更换主控板的，周期延长至 15 个工作日。"
    )
    doc.add_heading("维修后验收", level=2)
    doc.add_paragraph(
        "维修完成的设备随附检测报告。客户收到设备后 7 天内未提出异议的，视为验收合格。"
        "更换的零部件享有 90 天保修，或原保修期剩余时间，以较长者为准。"
    )

    doc.add_heading("培训服务", level=1)
    doc.add_paragraph(
        "设备交付时免费提供一次现场操作培训，时长 1 天，每期最多 8 名学员。"
        "额外的培训可按期购买，也可参加在深圳培训中心每季度举办的公开课。"
    )
    return save_ooxml(doc)


# --------------------------------------------------------------------------- ru/prais-list.xlsx


def make_price_xlsx() -> bytes:
    wb = Workbook()
    set_core(wb.properties, "Прайс-лист 2024", "Цены на оборудование и услуги", "ru-RU")
    wb.properties.creator = AUTHOR

    ws = wb.active
    ws.title = "Оборудование"
    ws.append(["Прайс-лист Northwind Robotics для России, действует с 1 октября 2024 г. "
               "Цены в рублях, включая НДС 20 %."])
    ws.append([])
    header = ["Артикул", "Модель", "Описание", "Цена, руб.", "Срок поставки, недель"]
    ws.append(header)
    equipment = [
        ("NW-K200", "Kestrel AMR-200", "Мобильный робот, грузоподъёмность 200 кг", 3_150_000, 6),
        ("NW-K500", "Kestrel AMR-500", "Мобильный робот, грузоподъёмность 500 кг", 4_620_000, 8),
        ("NW-F40", "Finch Tote FT-40", "Робот для перевозки ящиков, до 40 кг", 1_760_000, 4),
        ("NW-O1000", "Osprey Lift OL-1000", "Автономный паллетный робот, до 1000 кг", 9_480_000, 14),
        ("NW-H6", "Heron Arm H6", "Коллаборативный манипулятор, 6 кг", 2_730_000, 10),
        ("NW-H10", "Heron Arm H10", "Коллаборативный манипулятор, 10 кг", 3_660_000, 10),
        ("NW-WD1", "Wren Dock WD-1", "Зарядная станция", 375_000, 3),
        ("NW-WD2", "Wren Dock WD-2", "Станция быстрой зарядки", 650_000, 3),
        ("NW-FD-S", "Лицензия Fleetdeck", "Годовая лицензия на один робот", 96_000, 0),
    ]
    for row in equipment:
        ws.append(list(row))

    ws2 = wb.create_sheet("Услуги")
    ws2.append(["Услуга", "Единица", "Цена, руб.", "Примечание"])
    services = [
        ("Монтаж зарядной станции Wren", "станция", 28_000, "Включая анкеры и проверку линии питания"),
        ("Ввод робота в эксплуатацию", "робот", 55_000, "Калибровка лидара, сопряжение, тестовый прогон"),
        ("Построение карты площадки", "до 5 000 м²", 120_000, "Каждые следующие 5 000 м² — 60 000 руб."),
        ("Обучение операторов", "группа до 8 человек", 42_000, "Один день, на площадке заказчика"),
        ("Выезд инженера, Москва и МО", "день", 18_500, "Для тарифа «Премиум» два выезда в год бесплатно"),
        ("Выезд инженера, другие регионы", "день", 24_000, "Плюс проезд и проживание по факту"),
        ("Тариф поддержки «Стандарт»", "год", 0, "Входит в стоимость лицензии Fleetdeck"),
        ("Тариф поддержки «Премиум»", "робот в год", 145_000, "Круглосуточная дежурная линия, приоритетная очередь"),
        ("Продление гарантии CarePlus", "год", None, "9 % от цены оборудования за каждый год продления"),
    ]
    for row in services:
        ws2.append(list(row))

    bold = Font(bold=True)
    for cell in ws[3]:
        cell.font = bold
    for cell in ws2[1]:
        cell.font = bold
    for sheet, widths in ((ws, [12, 22, 44, 14, 22]), (ws2, [34, 22, 14, 52])):
        for idx, width in enumerate(widths):
            sheet.column_dimensions["ABCDE"[idx]].width = width
    for r in range(4, ws.max_row + 1):
        ws.cell(r, 4).number_format = "#,##0"
    for r in range(2, ws2.max_row + 1):
        ws2.cell(r, 3).number_format = "#,##0"
    return save_ooxml(wb)


# --------------------------------------------------------------------------- main

TARGETS = {
    "en/onboarding.pdf": make_onboarding_pdf,
    "en/security-handbook.docx": make_security_docx,
    "en/roadmap.pptx": make_roadmap_pptx,
    "zh/after-sales-service.docx": make_after_sales_docx,
    "ru/prais-list.xlsx": make_price_xlsx,
}


def main(argv: list[str] | None = None) -> int:
    return write_targets(TARGETS, __doc__.splitlines()[0], argv)


def write_targets(
    targets: dict[str, Callable[[], bytes]], description: str, argv: list[str] | None
) -> int:
    """Build each of ``targets`` (path under examples/docs → its builder) and write it, or
    with ``--check`` only compare: exit 1 when a committed file differs from a fresh build.
    scripts/make_scans.py builds its files with this too."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if any committed file differs from a fresh build")
    args = parser.parse_args(argv)
    stale = []
    for rel, build in targets.items():
        data = build()
        path = DOCS / rel
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"wrote examples/docs/{rel} ({len(data)} bytes)")
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
