"""E-mail: ``.eml`` (one message) and ``.mbox`` (many), through Python's :mod:`email`.

A message is a document: titled by its subject, its text a summary of its headers then
its text body (its HTML body's text when it has no plain one), with ``from``, ``to``,
``date`` (ISO 8601) and ``message_id`` as filterable metadata. Encoded words, charsets
(koi8-r, gb2312 …), quoted-printable and base64 are decoded by ``email.policy.default``.
Its attachments are documents of their own, members of the message
(``mail.eml!/report.pdf``). A mailbox's members are its messages, named
``<n>-<subject-slug>.eml`` by their place in it (1 for the first: a message appended
leaves the others' names as they were), and their attachments
(``box.mbox!/3-quarterly-report/report.pdf``).
"""

from __future__ import annotations

import email
import io
import mimetypes
import re
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage, Message
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.archive import ArchiveLimits, Entry, safe_member_name
from knowhub.ingest.loaders.common import Limits, loader_error
from knowhub.ingest.loaders.html import load_html
from knowhub.models import Heading, LoadedDocument

__all__ = ["MAIL_EXTENSIONS", "is_mail", "load_eml", "mail_entries"]

MAIL_EXTENSIONS = (".eml", ".mbox")
"""Name endings of mail files: a message (a document and its attachments), a mailbox."""

_SUMMARY_HEADERS = ("From", "To", "Cc", "Date")
_SLUG_CHARS = 40
_NOT_WORD = re.compile(r"[\W_]+")
_PIECE = 1 << 16
_BOM = b"\xef\xbb\xbf"  # the HTML loader takes a BOM's word for the encoding


def is_mail(name: str) -> bool:
    return name.lower().endswith(MAIL_EXTENSIONS)


def _parse(data: bytes) -> EmailMessage:
    message = email.message_from_bytes(data, policy=policy.default)
    assert isinstance(message, EmailMessage)  # what policy.default makes
    return message


def load_eml(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load one message: a summary of its headers, then its text body.

    Raises:
        LoaderError: it has neither headers nor a body (not a message).
    """
    message = _parse(data)
    if not message.keys():
        raise loader_error(path, "is not an e-mail message (no headers): save it as .txt")
    subject = _header(message, "Subject")
    title = subject or PurePosixPath(path.name).stem
    lines = [title, ""]
    lines += [f"{name}: {value}" for name in _SUMMARY_HEADERS if (value := _header(message, name))]
    attachments = [_attachment_name(p, i) for i, p in enumerate(message.iter_attachments(), 1)]
    if attachments:
        lines.append(f"Attachments: {', '.join(attachments)}")
    text = "\n".join(lines) + "\n\n" + _body(path, message, limits).strip() + "\n"
    return LoadedDocument(
        text=text,
        title=title,
        format="email",
        headings=(Heading(1, title, 0),),
        metadata=_metadata(message, subject),
        line_map=None,  # the text is assembled from the message: no file lines to go to
    )


def _header(message: Message, name: str) -> str:
    value = message.get(name)
    return " ".join(str(value).split()) if value is not None else ""


def _metadata(message: EmailMessage, subject: str) -> dict[str, str]:
    facts = {
        "subject": subject,
        "from": _header(message, "From"),
        "to": _header(message, "To"),
        "message_id": _header(message, "Message-ID"),
    }
    date = message.get("Date")
    when = getattr(date, "datetime", None)
    facts["date"] = when.isoformat() if when is not None else ""
    return {key: value for key, value in facts.items() if value}


def _body(path: Path, message: EmailMessage, limits: Limits) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    text = _text(part)
    if part.get_content_subtype() == "html":
        return load_html(path.with_suffix(".html"), _BOM + text.encode(), limits).text
    return text


def _text(part: Message) -> str:
    """A text part, decoded by its charset (a charset Python does not know: as UTF-8
    with replacements, rather than losing the message)."""
    try:
        content = part.get_content()  # type: ignore[attr-defined]
        return content if isinstance(content, str) else ""
    except (LookupError, ValueError):
        payload = part.get_payload(decode=True)
        return payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""


def _attachment_name(part: Message, index: int) -> str:
    name = safe_member_name(PurePosixPath(part.get_filename() or "").name)
    if name:
        return name
    kind = part.get_content_type()
    extension = ".eml" if kind == "message/rfc822" else mimetypes.guess_extension(kind) or ""
    return f"attachment-{index}{extension}"


def _attachment_bytes(part: Message) -> bytes:
    """An attachment's bytes: text re-encoded as UTF-8 (its charset is in its headers, not
    in the file it becomes), a forwarded message as sent."""
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload(0)
        return inner.as_bytes() if isinstance(inner, Message) else b""
    if part.get_content_maintype() == "text":
        return _text(part).encode()
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _attachments(message: EmailMessage, folder: str, limits: ArchiveLimits) -> Iterator[Entry]:
    taken: set[str] = set()
    for index, part in enumerate(message.iter_attachments(), 1):
        name = _unique(_attachment_name(part, index), taken)
        data = _attachment_bytes(part)
        if len(data) > limits.max_member_bytes:
            problem = (
                f"too large: {len(data):,} bytes > limit {limits.max_member_bytes:,}; "
                "raise ingest.max_file_bytes"
            )
            yield Entry(folder + name, problem=problem, failed=True)
        else:
            yield Entry(folder + name, data)


def _unique(name: str, taken: set[str]) -> str:
    stem, suffix = PurePosixPath(name).stem, PurePosixPath(name).suffix
    unique, n = name, 1
    while unique in taken:
        n += 1
        unique = f"{stem}-{n}{suffix}"
    taken.add(unique)
    return unique


def mail_entries(path: Path, file: BinaryIO, limits: ArchiveLimits) -> Iterator[Entry]:
    """A message's attachments, or a mailbox's messages and theirs, one at a time.

    Raises:
        LoaderError: more members than ``ingest.archive_max_members``, or more bytes than
            ``ingest.archive_max_bytes``; the message names the setting.
    """
    if path.name.lower().endswith(".eml"):
        data = file.read(limits.max_member_bytes + 1)
        if len(data) > limits.max_member_bytes:
            raise loader_error(path, _too_large_message(limits))
        entries = _attachments(_parse(data), "", limits)
    else:
        _check_mailbox(path, file, limits)  # before any message is read
        entries = _mailbox(file, limits)
    for count, entry in enumerate(entries, 1):
        if count > limits.max_members:
            raise _too_many(path, limits)
        yield entry


def _too_many(path: Path, limits: ArchiveLimits) -> LoaderError:
    return loader_error(
        path,
        f"holds more than {limits.max_members:,} messages and attachments; refused whole: "
        "raise ingest.archive_max_members if it is genuine",
    )


def _check_mailbox(path: Path, file: BinaryIO, limits: ArchiveLimits) -> None:
    """Refuse a mailbox of more messages or bytes than the limits, by a first pass that keeps
    nothing (then read again from its start)."""
    size = file.seek(0, io.SEEK_END)
    if size > limits.max_bytes:
        raise loader_error(
            path,
            f"holds {size:,} bytes, over {limits.max_bytes:,}; refused whole: raise "
            "ingest.archive_max_bytes if it is genuine",
        )
    file.seek(0)
    for count, _ in enumerate(_messages(file, 0), 1):
        if count > limits.max_members:
            raise _too_many(path, limits)
    file.seek(0)


def _mailbox(file: BinaryIO, limits: ArchiveLimits) -> Iterator[Entry]:
    for number, data in enumerate(_messages(file, limits.max_member_bytes), 1):
        if data is None:
            yield Entry(f"{number}.eml", problem=_too_large_message(limits), failed=True)
            continue
        message = _parse(data)
        folder = f"{number}-{_slug(_header(message, 'Subject'))}"
        yield Entry(f"{folder}.eml", data, expand=False)
        yield from _attachments(message, folder + "/", limits)


def _too_large_message(limits: ArchiveLimits) -> str:
    return f"a message of more than {limits.max_member_bytes:,} bytes; raise ingest.max_file_bytes"


def _messages(file: BinaryIO, max_bytes: int) -> Iterator[bytes | None]:
    """Each message of an mbox (mboxo/mboxrd, as :class:`mailbox.mbox` splits it: a line
    starting ``From `` starts one), without its ``From`` line; None for one over
    ``max_bytes`` (its lines are counted, not kept). Lines are read 64 kB at most at a time,
    so a file with no line breaks costs no more."""
    lines: list[bytes] = []
    size, started, line_start = 0, False, True
    for piece in iter(lambda: file.readline(_PIECE), b""):
        starts_message = line_start and piece.startswith(b"From ")
        line_start = piece.endswith(b"\n")
        if starts_message:
            if started:
                yield _joined(lines) if size <= max_bytes else None
            started, lines, size = True, [], 0
        elif started:  # what comes before the first message is no mail
            size += len(piece)
            if size <= max_bytes:
                lines.append(piece)
    if started:
        yield _joined(lines) if size <= max_bytes else None


def _joined(lines: list[bytes]) -> bytes:
    if lines and not lines[-1].strip():  # the blank line before the next "From "
        lines = lines[:-1]
    return b"".join(lines)


def _slug(subject: str) -> str:
    slug = _NOT_WORD.sub("-", subject.lower()).strip("-")[:_SLUG_CHARS].strip("-")
    return slug or "message"
