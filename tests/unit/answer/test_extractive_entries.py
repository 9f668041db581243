"""An option entry's sentence is quoted with the entry's name: the name is the answer."""

from __future__ import annotations

from dataclasses import replace

from knowhub.answer.extractive import extractive_answer
from tests.answer_helpers import source


def test_a_sentence_of_an_option_entry_is_led_by_the_option() -> None:
    # tail(1) in Chinese: the entry's sentence never repeats "--pid=PID".
    entry = replace(
        source("和 -f 同时使用时，在进程号为 PID 的进程结束后终止执行"),
        section_path="tail(1) > 选项 > --pid=PID",
    )
    answer = extractive_answer("tail -f 怎样在某个进程退出后自动结束？", [entry])
    assert answer.startswith("--pid=PID: 和 -f 同时使用时")


def test_a_topic_heading_or_a_sentence_naming_its_entry_is_left_as_it_is() -> None:
    topic = replace(source("Backups run every 6 hours."), section_path="Guide > Backups")
    named = replace(
        source("-S or --chop-long-lines Causes long lines to be chopped."),
        section_path="less(1) > OPTIONS > -S or --chop-long-lines",
    )
    assert (
        extractive_answer("How often do backups run?", [topic]) == "Backups run every 6 hours. [1]"
    )
    assert extractive_answer("less chop long lines", [named]).startswith("-S or --chop")
