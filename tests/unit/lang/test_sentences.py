"""Where sentences end."""

from __future__ import annotations

from knowhub.lang.sentences import sentences


def test_a_period_after_an_abbreviation_or_before_lower_case_ends_no_sentence() -> None:
    # resolv.conf(5) in Russian: the split left the number with one half, the servers with
    # the other, and an answer quoted the half without the number.
    text = "Может быть указано до MAXNS (в настоящее время 3, см. <resolv.h>) серверов. Далее."
    assert sentences(text) == [
        "Может быть указано до MAXNS (в настоящее время 3, см. <resolv.h>) серверов.",
        "Далее.",
    ]
    assert sentences("Use a tool, e.g. the find command. Then go.") == [
        "Use a tool, e.g. the find command.",
        "Then go.",
    ]


def test_a_sentence_that_starts_with_a_command_in_lower_case_stands_alone() -> None:
    text = "The at command queues jobs. atrm deletes jobs. atq lists them."
    assert sentences(text) == [
        "The at command queues jobs.",
        "atrm deletes jobs.",
        "atq lists them.",
    ]
