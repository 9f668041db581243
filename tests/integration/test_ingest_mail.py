"""E-mail is ingested: an ``.eml`` message and each message of an ``.mbox`` a document titled
by its subject, with from/to/date/message_id metadata, and each attachment a document of its
own (``box.mbox!/2-…/report.md``); charsets (koi8-r, gb2312) and transfer encodings decoded
(messages built by Python's email package, mailboxes written by its mailbox module)."""

from __future__ import annotations

import mailbox
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

from knowhub import App


def message(subject: str, body: str, charset: str = "utf-8", **attachments: bytes) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = subject
    mail["From"] = "Ольга Петрова <olga@example.org>"
    mail["To"] = "team@example.org"
    mail["Date"] = format_datetime(datetime(2026, 11, 3, 9, 30, tzinfo=UTC))
    mail["Message-ID"] = make_msgid(domain="example.org")
    mail.set_content(
        body, charset=charset, cte="quoted-printable" if charset == "utf-8" else "base64"
    )
    for name, data in attachments.items():
        mail.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return mail


def test_an_mbox_of_three_messages_and_an_attachment_is_four_cited_documents(
    app: App, tmp_path: Path
) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    box = mailbox.mbox(folder / "team.mbox")
    box.add(message("Quarterly report", "The quokkabeam budget grew by a third."))
    report_md = b"# Findings\n\nThe zebrafinch survey counted 40 nests.\n"
    box.add(message("Survey results", "See the attached findings.", **{"findings.md": report_md}))
    box.add(message("会议纪要", "下周讨论熊猫预算。", charset="gb2312"))
    box.flush()
    box.close()
    report = app.collection().ingest([folder])
    assert sorted(report.added) == [
        "team.mbox!/1-quarterly-report.eml",
        "team.mbox!/2-survey-results.eml",
        "team.mbox!/2-survey-results/findings.md",
        "team.mbox!/3-会议纪要.eml",
    ]
    hit = app.collection().search("zebrafinch nests").hits[0]
    assert hit.source == "team.mbox!/2-survey-results/findings.md"
    first = app.collection().search("quokkabeam budget").hits[0]
    assert first.source == "team.mbox!/1-quarterly-report.eml"
    assert first.title == "Quarterly report"
    assert app.collection().search("熊猫预算").hits[0].source == "team.mbox!/3-会议纪要.eml"
    records = {r.source: r for r in app.collection().documents()}
    meta = records["team.mbox!/1-quarterly-report.eml"].metadata
    assert meta["from"] == "Ольга Петрова <olga@example.org>"
    assert meta["date"] == "2026-11-03T09:30:00+00:00"
    assert meta["message_id"].endswith("@example.org>")


def test_a_message_appended_to_an_mbox_leaves_the_others_unchanged(
    app: App, tmp_path: Path
) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    box = mailbox.mbox(folder / "team.mbox")
    box.add(message("First", "The quokkabeam starts."))
    box.flush()
    app.collection().ingest([folder])
    box.add(message("Second", "The lynxfire follows."))
    box.flush()
    box.close()
    again = app.collection().ingest([folder])
    assert again.unchanged == ["team.mbox!/1-first.eml"]
    assert again.added == ["team.mbox!/2-second.eml"]


def test_a_russian_eml_in_koi8_r_is_decoded_and_its_attachment_is_a_document(
    app: App, tmp_path: Path
) -> None:
    mail = message(
        "Отчёт о проверке",
        "Проверка турбины прошла успешно.",
        charset="koi8-r",
        **{"итоги.md": "# Итоги\n\nЗамена подшипника запланирована.\n".encode()},
    )
    raw = mail.as_bytes()
    assert "Проверка".encode("koi8-r") not in raw  # base64 of koi8-r: nothing readable as is
    (tmp_path / "mail").mkdir()
    (tmp_path / "mail" / "report.eml").write_bytes(raw)
    report = app.collection().ingest([tmp_path / "mail"])
    assert sorted(report.added) == ["report.eml", "report.eml!/итоги.md"]
    hit = app.collection().search("проверка турбины").hits[0]
    assert hit.source == "report.eml" and hit.title == "Отчёт о проверке"
    assert "Проверка турбины прошла успешно." in hit.text
    assert app.collection().search("замена подшипника").hits[0].source == "report.eml!/итоги.md"


def test_an_html_only_message_is_read_through_its_html(app: App, tmp_path: Path) -> None:
    mail = EmailMessage()
    mail["Subject"] = "Newsletter"
    mail.set_content(
        "<html><body><h1>News</h1><p>The quokkabeam ships.</p></body></html>", subtype="html"
    )
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "news.eml").write_bytes(mail.as_bytes())
    app.collection().ingest([tmp_path / "m"])
    hit = app.collection().search("quokkabeam ships").hits[0]
    assert hit.source == "news.eml" and "<p>" not in hit.text
