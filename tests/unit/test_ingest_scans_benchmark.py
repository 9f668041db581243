"""benchmarks/ingest_scans.py's own logic: the indexed text put back together from chunks,
the scores read from it, and medians per configuration.

No timing is asserted: the benchmark's numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from benchmarks.ingest_corpus import HEADER, Corpus, page_bodies
from benchmarks.ingest_scans import _scores, document_text, file_lang, summarise


def test_overlapping_chunks_give_the_text_once() -> None:
    text = "The first page of the scan.\n\nThe second page."
    chunks = [(0, 27, text[:27]), (20, 46, text[20:46]), (29, 46, text[29:46])]
    assert document_text(chunks) == text


def test_a_gap_between_chunks_is_a_blank_line_and_order_does_not_matter() -> None:
    chunks = [(40, 45, "later"), (0, 5, "first")]
    assert document_text(chunks) == "first\n\nlater"


def test_file_language_comes_from_the_name() -> None:
    assert [file_lang(n) for n in ("scan-zh.pdf", "text-ru.pdf", "page-en.png")] == [
        "zh",
        "ru",
        "en",
    ]


def test_pages_differ_so_cleanup_has_no_repeated_pages_to_remove() -> None:
    pages = page_bodies("en", 10, random.Random(20))
    assert len({page.split("\n")[0][:60] for page in pages}) >= 6


def test_scores_count_furniture_left_and_leave_picture_blocks_out() -> None:
    corpus = Corpus(truth={"scan-en.pdf": ["Backups run at night."]})
    text = f"{HEADER}\nBackups run at night.\n\n[Image: a chart]\n\nPage 1 of 10"
    row = _scores("scan-en.pdf", text, {}, corpus)
    assert row["headers_left"] == 1
    assert row["footers_left"] == 1
    assert row["ref"] == len("Backups run at night.")
    assert row["dist"] == len(HEADER) + len(" Page 1 of 10") + 1
    assert row["dist_body"] == 0


def test_misread_furniture_is_still_furniture() -> None:
    corpus = Corpus(truth={"scan-ru.pdf": ["Текст страницы."]})
    text = "ACME Dperations Handbcok\nТекст страницы.\nРаде 3 of 10 :\nPage4ocf 10"
    row = _scores("scan-ru.pdf", text, {}, corpus)
    assert (row["headers_left"], row["footers_left"], row["dist_body"]) == (1, 2, 0)


def test_pictures_described_and_words_found() -> None:
    corpus = Corpus(picture_words={"pictures.docx": ["North", "South", "Tokyo"]})
    images = [{"description": "Quarterly revenue North South"}, {"description": ""}]
    row = _scores("pictures.docx", "", {"knowhub": {"images": images}}, corpus)
    assert (row["pictures"], row["described"]) == (2, 1)
    assert (row["words_found"], row["words"]) == (2, 3)


def test_summary_takes_medians_and_quality_from_the_first_run(tmp_path: Path) -> None:
    def row(run: int, wall: float) -> dict[str, Any]:
        scores = {"chunks": 4, "dist": 1, "dist_body": 0, "ref": 100}
        files = {"a.pdf": scores} if run == 1 else None
        out = {"config": "hashing", "kind": "scan-en", "run": run, "rc": 0, "units": 10}
        out |= {"wall_s": wall, "cpu_s": wall, "peak_rss_mb": 200.0, "report": {}}
        return out | ({"files": files} if files else {})

    (summary,) = summarise([row(1, 9.0), row(2, 5.0), row(3, 4.0)])
    assert summary["wall_s"] == 5.0
    assert summary["units_per_s"] == 2.0
    assert summary["wall_range"] == [4.0, 9.0]
    assert (summary["chunks"], summary["cer"]) == (4, 0.01)
