"""Markdown tables are chunked apart from prose, in windows of whole rows."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.loaders import load
from knowhub.ingest.loaders.markdown import TABLE_BLOCK_CHARS, markdown_table
from knowhub.models import Chunk
from tests.unit.ingest.test_chunk import DOC_HASH, EN, assert_spans_exact, chunk, markdown

Writer = Callable[[str, bytes], Path]

HEADER = "| model | charge_time_min | weight_kg |\n| --- | --- | --- |"


def rows(count: int, start: int = 0) -> list[str]:
    return [f"| Robot R-{n} | {60 + n} | {300 + n} |" for n in range(start, start + count)]


def table_lines(piece: Chunk) -> list[str]:
    return [line for line in piece.text.split("\n") if line.startswith("|")]


def test_a_loaded_table_is_chunked_in_row_windows_each_opening_with_the_header(
    write: Writer,
) -> None:
    cells = "\n".join(f"Robot R-{n},{60 + n},{300 + n}" for n in range(100))
    path = write("specs.csv", f"model,charge_time_min,weight_kg\n{cells}\n".encode())
    document = load(path)
    chunks = chunk_document(document, DOC_HASH, ChunkingOptions())
    assert len(chunks) > 3
    assert all(piece.text == document.text[piece.char_start : piece.char_end] for piece in chunks)
    assert chunks[0].text.startswith(f"# specs\n\n{HEADER}\n")
    assert all(piece.text.startswith(f"{HEADER}\n") for piece in chunks[1:])
    assert all(len(piece.text) <= TABLE_BLOCK_CHARS + len("# specs\n\n") for piece in chunks)
    body = [line for piece in chunks for line in table_lines(piece)[2:]]
    assert body == rows(100)  # every row once, in order
    again = chunk_document(load(path), DOC_HASH, ChunkingOptions())
    assert [piece.chunk_id for piece in again] == [piece.chunk_id for piece in chunks]


def test_prose_before_and_after_a_table_goes_into_chunks_of_its_own() -> None:
    table = "\n".join([HEADER, *rows(3)])
    doc = markdown(f"# Specs\n\nCharging times below.\n\n{table}\n\nWeights are in kilograms.\n")
    chunks = chunk(doc)
    assert [piece.text for piece in chunks] == [
        "# Specs\n\nCharging times below.",
        table,
        "Weights are in kilograms.",
    ]
    assert {piece.section_path for piece in chunks} == {"Specs"}
    assert_spans_exact(doc, chunks)


def test_a_table_that_opens_its_section_carries_the_heading_line() -> None:
    table = "\n".join([HEADER, *rows(2)])
    doc = markdown(f"# Specs\n\n{table}\n\nAfter the table.\n")
    chunks = chunk(doc)
    assert [piece.text for piece in chunks] == [f"# Specs\n\n{table}", "After the table."]
    assert_spans_exact(doc, chunks)


def test_a_one_row_table_is_one_chunk() -> None:
    table = "\n".join([HEADER, *rows(1)])
    doc = markdown(f"{' '.join(EN)}\n\n{table}\n")
    chunks = chunk(doc)
    assert [piece.text for piece in chunks] == [" ".join(EN), table]
    assert_spans_exact(doc, chunks)


def test_a_long_table_written_by_hand_is_cut_between_rows_within_the_size() -> None:
    table = "\n".join([HEADER, *rows(60)])
    doc = markdown(f"Intro.\n\n{table}\n")
    every = chunk(doc, size=300, overlap=50)
    assert_spans_exact(doc, every)
    assert every[0].text == "Intro."
    chunks = every[1:]
    assert len(chunks) > 3
    assert chunks[0].text.startswith(HEADER)
    assert all(len(piece.text) <= 300 for piece in chunks)
    assert all(line in rows(60) for piece in chunks[1:] for line in piece.text.split("\n"))
    assert [line for piece in chunks for line in table_lines(piece)][2:] == rows(60)


def test_a_table_wider_than_the_budget_gets_a_block_and_a_chunk_per_row() -> None:
    header = [f"column number {n}" for n in range(40)]
    body = [[f"row {r} value {n}" for n in range(40)] for r in range(3)]
    text = markdown_table([header, *body])
    blocks = text.split("\n\n")
    assert len(text.split("\n", 1)[0]) > TABLE_BLOCK_CHARS
    assert [block.count("\n") for block in blocks] == [2, 2, 2]  # header, delimiter, a row
    doc = markdown(text)
    chunks = chunk(doc, size=2000)
    assert [piece.text for piece in chunks] == blocks
    assert_spans_exact(doc, chunks)


def test_a_row_wider_than_the_size_is_split_like_prose() -> None:
    wide = "| " + " | ".join(f"cell {n} of a very wide row" for n in range(30)) + " |"
    doc = markdown(f"| a |\n| --- |\n{wide}\n| short |\n")
    chunks = chunk(doc, size=200, overlap=0)
    assert all(len(piece.text) <= 200 * 1.1 for piece in chunks)
    assert chunks[-1].text == "| short |"
    assert_spans_exact(doc, chunks)


def test_gfm_delimiter_rows_are_recognised_and_pipes_in_prose_are_not_a_table() -> None:
    loose = "model | weight\n:--- | ---:\nR-1 | 300"
    prose = "Pipes | in a sentence are not a table."
    doc = markdown(f"Before.\n\n{loose}\n\n{prose}\n\nAfter.\n")
    assert [piece.text for piece in chunk(doc)] == ["Before.", loose, f"{prose}\n\nAfter."]


def test_tables_mixed_with_prose_never_share_a_chunk_and_spans_stay_exact() -> None:
    rng = random.Random(20)
    for unit in ("chars", "tokens"):
        parts = []
        for number in range(40):
            if rng.random() < 0.3:
                parts.append("\n".join([HEADER, *rows(rng.randint(0, 25), number * 100)]))
            else:
                parts.append(" ".join(rng.choice(EN) for _ in range(rng.randint(1, 12))))
        doc = markdown("\n\n".join(parts) + "\n")
        chunks = chunk(doc, size=250, overlap=50, unit=unit)
        assert_spans_exact(doc, chunks)
        for piece in chunks:
            lines = piece.text.split("\n")
            assert all(line.startswith("|") for line in lines) or not any(
                line.startswith("|") for line in lines
            )


def test_a_word_table_is_a_chunk_apart_from_the_list_before_it(docx_path: Path) -> None:
    document = load(docx_path)
    texts = [piece.text for piece in chunk_document(document, DOC_HASH, ChunkingOptions())]
    assert "| Tier | Retention |\n| --- | --- |\n| gold | 90 days |\n| a\\|b | 7 |" in texts
    assert "# Restoring\n\n- Stop the service first.\n- Copy the snapshot back." in texts
