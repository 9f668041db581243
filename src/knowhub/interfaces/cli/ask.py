"""``knowhub ask``: an answer with citations (extractive offline, or from the configured LLM)."""

from __future__ import annotations

from typing import Any

import click

from knowhub.interfaces.arguments import parse_key_values
from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.terminal import echo, echo_json
from knowhub.interfaces.wire import wire
from knowhub.models import text_place

__all__ = ["ask", "flagged_lines", "render_answer", "where"]


@click.command()
@click.argument("question")
@click.option(
    "--collection",
    "-c",
    help="Collection to answer from (default: the configured one; unset, the only one there is).",
)
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE", help="Metadata filter.")
@click.option("--stream", is_flag=True, help="Print the answer as it is generated.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (with --stream: one event per line)."
)
@click.pass_obj
def ask(
    obj: CliContext,
    question: str,
    collection: str | None,
    filters: tuple[str, ...],
    stream: bool,
    as_json: bool,
) -> None:
    """Answer QUESTION from your documents, citing sources as [n].

    With no LLM configured (llm.provider: none) the answer is extractive: the best
    sentences of the top sources. When nothing relevant is found it says so
    (hit_type insufficient_context) instead of inventing an answer.
    """
    events = wire(
        obj.app().collection(collection).ask(question, parse_key_values(filters, "--filter"))
    )
    if stream and as_json:
        for kind, payload in events:
            echo_json({"event": kind, **payload})
        return
    result: dict[str, Any] = {}
    for kind, payload in events:
        if kind == "token" and stream:
            echo(payload["text"], nl=False)
        elif kind == "end":
            result = payload
    if as_json:
        emit(result, True)
    else:
        emit(render_answer(result, answer_shown=stream), False)


def render_answer(result: dict[str, Any], answer_shown: bool = False) -> str:
    """The answer, its numbered sources, its warnings and a one-line verdict."""
    lines = [] if answer_shown else [result["answer"]]
    lines.append("")
    if result["sources"] and result["hit_type"] == "rag":
        lines.append("Sources:")
        lines += [f"  [{s['n']}] {where(s)}" for s in result["sources"]]
    elif result["sources"] and result["hit_type"] == "insufficient_context":
        lines.append("Closest sources (not relevant enough to answer from):")
        # Files, each once: two chunks of one file would read as the same line twice.
        files = dict.fromkeys(s["source"] for s in result["sources"])
        lines += [f"  {source}" for source in list(files)[:3]]
    lines += flagged_lines(result)
    lines += [f"Warning: {line}" for line in result.get("warnings", [])]
    verdict = [result["hit_type"], f"confidence {result['confidence']:.2f}"]
    verdict += [result["generation_verification_status"]] if result.get("verification") else []
    lines.append(f"({', '.join([*verdict, result['model']])})")
    return "\n".join(lines)


def flagged_lines(result: dict[str, Any]) -> list[str]:
    """The answer's sentences its sources do not (fully) back, each marked: never kept silently."""
    checked = result.get("verification") or {}
    marks = {"unsupported": "!", "partial": "?"}
    flagged = [s for s in checked.get("sentences", []) if s["status"] in marks]
    if not flagged:
        return []
    lines = ["Not supported by the cited sources (! unsupported, ? partly):"]
    return lines + [f"  {marks[s['status']]} {s['text']}" for s in flagged]


def where(source: dict[str, Any]) -> str:
    """``source, p. 3, § A > B, lines 10-24``: where a numbered source is, as known."""
    parts = [source.get("url") or source["source"]]  # url: absent from older servers' answers
    if source["page"]:
        parts.append(f"p. {source['page']}")
    if source["section_path"]:
        parts.append(f"§ {source['section_path']}")
    # char_start/char_end: 0 in the answers of servers before they were given.
    lines = (source["line_start"], source["line_end"])
    if place := text_place(*lines, source.get("char_start", 0), source.get("char_end", 0)):
        parts.append(place)
    return ", ".join(parts)
