"""What the extractive answer quotes: entries by their name, lead-ins and the sentences
leaned on with what completes them, repeats once, and what answers in another language."""

from __future__ import annotations

from dataclasses import replace

import pytest

from knowhub.answer import extractive
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


def test_an_faq_question_is_quoted_with_its_answer() -> None:
    faq = source("В: Ctrl+A не работает, где включить?\nО: Назначьте cm_MarkMarkAll на Ctrl+A.")
    answer = extractive_answer("Ctrl+A не работает. Где включить?", [faq])
    assert "cm_MarkMarkAll" in answer


def test_the_best_sentence_keeps_the_next_one_that_ends_what_it_says() -> None:
    text = (
        "Determines the number of connection slots reserved for superusers. "
        "The default number of reserved slots is three connections.\n\n"
        "Reserved slots for superusers are also counted in max_connections. "
        "Superusers may always connect. Connection slots are shared."
    )
    answer = extractive_answer(
        "How many connection slots are reserved for superusers?", [source(text)], 1
    )
    assert "three" in answer


def test_a_later_pick_keeps_a_next_sentence_scoring_nearly_as_well() -> None:
    # LilyPond's contact page: what a list is for ends in the sentence after ("Most
    # developer discussion takes place on this list. You can also send patches here.").
    best = source("Patches go to the developer list, not the bug list.")
    later = source(
        "Most discussion takes place on this mailing list. You can also send patches here."
    )
    answer = extractive_answer(
        "How do I send patches to the developer mailing list?", [best, later], 2
    )
    assert answer.endswith("this mailing list. [2] You can also send patches here. [2]")
    # One scoring as a pick would but well under this pick (0.27 of a 0.47 pick) is not.
    best = source("Patches go to the bug list, never to users.")
    later = source("Most discussion takes place on this mailing list. Send them as attachments.")
    answer = extractive_answer(
        "How do I send patches to the developer mailing list?", [best, later], 2
    )
    assert answer.endswith("this mailing list. [2]")
    # A later pick is quoted with a lead-in after it and what that introduces, too.
    later = source(
        "Most discussion takes place on this mailing list. To join it:\n\nmail join@lists"
    )
    answer = extractive_answer(
        "How do I send patches to the developer mailing list?", [best, later], 2
    )
    assert answer.endswith("this mailing list. [2] To join it: mail join@lists [2]")


def test_a_pick_followed_by_a_lead_in_is_quoted_with_what_it_introduces() -> None:
    # The Debian Edu manual: the steps after "以 GOsa 管理这种情况相当简单：" hold the answer,
    # which the lead-in itself, sharing no word with the question, never would have.
    text = (
        "Only members of the group sshusers may then log in with ssh. "
        "Doing it is simple:\n\n"
        "Create the group.\n"
        "Add AllowGroups sshusers to sshd_config."
    )
    answer = extractive_answer("Which group members may log in with ssh?", [source(text)], 1)
    assert answer.endswith("Add AllowGroups sshusers to sshd_config. [1]")


def test_an_entry_ending_in_a_colon_is_not_given_a_second_one() -> None:
    entry = replace(source("在进程结束后终止执行"), section_path="tail(1) > 选项 > --pid=PID:")
    assert extractive_answer("tail 进程结束", [entry]).startswith("--pid=PID: 在进程")


def test_a_topic_heading_leads_no_sentence_and_the_best_is_quoted_even_below_zero() -> None:
    topic = replace(
        source("Install the server package with apt."),
        section_path="PostgreSQL Guide > Server Administration > Installation",
    )
    assert extractive_answer("install server", [topic]).startswith("Install the server")
    debris = [replace(source("3.1.: 3.3.;"), chunk_id=f"c{i}") for i in range(4)]
    assert extractive_answer("frobnicate", [*debris, source("Nothing shared here.")]) != ""


def test_a_line_a_lead_in_introduces_is_quoted_with_its_lead_in() -> None:
    # csv(7)'s example: the code line scores best on "csv.writer", the lead-in before it
    # holds the answer (newline='').
    example = source(
        "Reading files is done with the module.\n\n"
        "import csv with open('some.csv', 'w', newline='') as f:\n"
        "writer = csv.writer(f) writer.writerows(someiterable)"
    )
    answer = extractive_answer("Why does writer.writerows add blank lines?", [example], 1)
    assert "newline=''" in answer and "writer = csv.writer(f)" in answer


def test_a_sentence_that_refers_back_is_quoted_after_the_one_it_leans_on() -> None:
    # The Sorting HOWTO: "That means …" answers "do equal keys keep their order?", yet the
    # word the asker looks for ("stable") is in the sentence before it.
    howto = source(
        "Sorts are guaranteed to be stable. That means that when multiple records have "
        "the same key, their original order is preserved."
    )
    answer = extractive_answer("Do records with the same key keep their original order?", [howto])
    assert answer == (
        "Sorts are guaranteed to be stable. [1] That means that when multiple records have "
        "the same key, their original order is preserved. [1]"
    )
    # ldd(1) in Russian: the sentence before is a command its lead-in introduces.
    manual = source(
        "Безопасной альтернативой является команда:\n\n$ objdump -p /путь | grep NEEDED\n\n"
        "Однако заметим, что эта альтернатива показывает только непосредственные зависимости."
    )
    answer = extractive_answer("альтернатива показывает непосредственные зависимости", [manual])
    assert answer.startswith("Безопасной альтернативой является команда: $ objdump -p")
    assert answer.endswith("непосредственные зависимости. [1]")
    # A sentence that opens the source has nothing before it to lean on.
    alone = source("This file sets the limits.")
    assert extractive_answer("limits file", [alone]) == "This file sets the limits. [1]"


def test_sentences_alike_but_naming_different_settings_are_both_quoted() -> None:
    # inotify(7) in Russian: one sentence per limit, alike but for the file's name; the
    # second was dropped as a repeat and the answer named the wrong limit.
    limits = [
        replace(
            source(
                f"/proc/sys/fs/inotify/{name} В этом файле задаётся ограничение на "
                f"количество {what}, которые могут быть созданы для одного "
                "реального идентификатора пользователя."
            ),
            chunk_id=name,
        )
        for name, what in (("max_user_instances", "экземпляров"), ("max_user_watches", "сторожков"))
    ]
    answer = extractive_answer("В каком файле задаётся лимит на число наблюдений inotify?", limits)
    assert "max_user_instances" in answer and "max_user_watches" in answer
    # The same sentence from two sources is still said once, citing both.
    twice = [replace(limits[0], chunk_id="again"), limits[0]]
    assert extractive_answer("ограничение inotify", twice).count("max_user_instances") == 1


def test_a_question_in_another_language_leans_on_meaning_more_than_on_shared_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # debian-edu's manual asked in Russian: the English sentence shares the question's
    # names (Debian, Edu, Samba) and nothing else; the Chinese one that answers shares
    # fewer of them but is closest in meaning. Meaning as the embedder would place it:
    naming = "For site specific changes on Debian Edu, copy the Samba settings to /etc/samba."
    answering = "要临时禁用一个用户的帐号，运行 smbpasswd -d <username>。"
    closer = {naming: 0.3, answering: 0.9}
    monkeypatch.setattr(
        extractive, "closeness", lambda _v, _l, _q, texts: [closer[t] for t in texts]
    )
    manual = source(f"{naming} {answering}")
    question = "Как в Debian Edu временно отключить учётную запись Samba пользователя?"
    answer = extractive.extractive_answer(question, [manual], 1, None, "ru")
    assert answer.startswith(answering)


def test_a_repeat_under_an_entry_named_with_an_equals_sign_is_still_said_once() -> None:
    # The entry's name leads the first quote ("--pid=FILE: …"); the same sentence from the
    # next chunk (overlap) names nothing more, so it cites both sources.
    entry = replace(
        source("Writes the process id to FILE when the daemon starts."),
        section_path="daemon(8) > OPTIONS > --pid=FILE",
    )
    again = replace(entry, chunk_id="c_0_1")
    answer = extractive_answer("Where does the daemon write its process id?", [entry, again])
    assert answer == "--pid=FILE: Writes the process id to FILE when the daemon starts. [1][2]"


def test_the_best_sentence_leaning_on_the_one_before_keeps_its_value_after_it() -> None:
    text = (
        "Controls the reserved connection slots. This setting determines how many connection "
        "slots are reserved for superusers. Whenever the number of active connections is at "
        "least the maximum, new connections are accepted only for superusers. The default "
        "value is three connections."
    )
    answer = extractive_answer(
        "How many connection slots are reserved for superusers?", [source(text)]
    )
    assert answer.startswith("Controls the reserved connection slots. [1] This setting determines")
    assert "The default value is three connections." in answer


def test_an_it_that_points_at_nothing_before_is_quoted_alone() -> None:
    text = "Sets the log level. It is an error to give both --quiet and --verbose."
    answer = extractive_answer("error both --quiet --verbose", [source(text)], 1)
    assert answer == "It is an error to give both --quiet and --verbose. [1]"
