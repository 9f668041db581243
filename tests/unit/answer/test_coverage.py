"""Coverage logic: which terms are key, which are uncovered, when that refuses the answer.

The collection's counts are a dictionary here; tests/integration/test_ask_coverage.py runs
the same check on real man pages through a real store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from knowhub.answer.coverage import FREQUENT, MAX_TERMS, Counts, check, key_terms
from knowhub.answer.pipeline import mentioned_text
from knowhub.models import Hit
from tests.answer_helpers import source


def _counts(known: dict[str, int]) -> Counts:
    def counts(terms: Sequence[str], limit: int) -> dict[str, int]:
        return {t: min(known.get(t, 0), limit) for t in terms}

    return counts


def _hit(text: str, language: str = "en") -> Hit:
    return replace(source(text), language=language)


def test_generic_words_values_and_stopwords_are_not_key_terms() -> None:
    terms = key_terms("How do I configure find to skip files larger than 100 MB?")
    assert [k.word for k in terms] == ["find", "skip", "larger"]


def test_names_options_and_stopwords_used_as_names_are_names() -> None:
    terms = {k.word: k.name for k in key_terms("Does the at command in Kubernetes take -q?")}
    assert terms == {"Kubernetes": True, "take": False, "-q": True, "at": True}


def test_an_options_joined_search_term_is_no_key_term() -> None:
    # "--no-splash" is searched as "nosplash" too; an index built before that term
    # existed lacks it, and the option would be "absent" and refuse the answer.
    assert [k.term for k in key_terms("How do I start it with --no-splash?")] == ["start", "splash"]


def test_an_absent_name_refuses_the_answer() -> None:
    evidence = [_hit("Install the ingress controller with TLS termination enabled.")]
    counts = _counts({"ingress": 3, "control": 9, "tl": 4, "termin": 2})
    found = check("How do I set up a Kubernetes ingress controller?", evidence, counts)
    assert found.uncovered == ["Kubernetes"] and found.refused


def test_a_minor_unsupported_name_gives_a_partial_answer() -> None:
    # Frobnix is in the collection, not in the evidence; an absent plain word is not judged.
    evidence = [_hit("atrm deletes queued jobs, identified by their job number.")]
    counts = _counts({"atrm": 1, "delet": 5, "queu": 5, "job": 9, "frobnix": 2, "frobnic": 0})
    found = check("How do atrm and Frobnix delete frobnicated queued jobs?", evidence, counts)
    assert found.uncovered == ["Frobnix"] and not found.refused


def test_frequent_terms_are_not_checked() -> None:
    counts = _counts({"tabl": FREQUENT, "vacuum": 3})
    found = check("How do I vacuum a table?", [_hit("VACUUM reclaims storage.")], counts)
    assert [k.word for k in found.terms] == ["vacuum"] and not found.uncovered


def test_a_frequent_name_no_source_says_is_neither_reported_nor_refused() -> None:
    # JSON is in 50 chunks or more of other pages, so it is no key term; saying the sources
    # lack it caught one near miss (ldd's JSON output) but flagged right answers for
    # "Linux", "GNU" and "Windows" six times on the real-document sets and the check set.
    counts = _counts({"ldd": 3, "json": FREQUENT, "depend": 9, "format": FREQUENT})
    evidence = [_hit("ldd prints the shared objects (shared libraries) each program requires.")]
    found = check("How do I make ldd print its dependencies as JSON?", evidence, counts)
    assert found.uncovered == [] and not found.refused
    # A joined name the sources lack is uncovered as written, its frequent parts not.
    parts = _counts({"tcp": FREQUENT, "keepal": 4, "time": FREQUENT})
    found = check("What sets tcp_keepalive_time?", [_hit("TCP keepalive probes.")], parts)
    assert found.uncovered == ["tcp_keepalive_time"]


def test_a_word_of_another_language_is_not_judged_on_foreign_evidence() -> None:
    # A Chinese question answered from English pages: its Chinese words have no known
    # translation, so their absence says nothing; the Latin name is looked up as written.
    evidence = [_hit("atrm deletes jobs, identified by their job number.")]
    found = check("如何用 atrm 删除作业？", evidence, _counts({"atrm": 1}))
    assert not found.uncovered and not found.refused
    missing = check("如何用 frobctl 删除作业？", evidence, _counts({}))
    assert missing.uncovered == ["frobctl"] and missing.refused


def test_plain_words_are_never_uncovered_and_a_latin_name_in_chinese_is() -> None:
    evidence = [_hit("使用 atrm 删除作业。", "zh")]
    assert not check("如何用 atrm 清除队列？", evidence, _counts({"atrm": 1})).uncovered
    found = check("如何用 atrm 清除 zstd 队列？", evidence, _counts({"atrm": 1}))
    assert found.uncovered == ["zstd"] and found.refused


def test_the_sentence_names_what_is_missing_in_the_questions_language() -> None:
    assert mentioned_text(["Kubernetes", "ingress"], "en") == (
        "The documents do not mention Kubernetes or ingress."
    )
    assert mentioned_text(["rar"], "zh") == "文档中没有提到rar。"
    assert mentioned_text(["Docker"], "ru") == "В документах не упоминается: Docker."
    assert mentioned_text(["JSON", "YAML"], "xx") == "The documents do not mention JSON or YAML."


def test_a_plain_word_the_collection_holds_is_not_uncovered_though_the_evidence_lacks_it() -> None:
    # Real questions: "a plain number" (find -size), "程序" (timeout): answered right, the word
    # said otherwise in the evidence. Only an absent plain word can be uncovered.
    evidence = [_hit("-size n: with no suffix, n counts 512-byte blocks.")]
    counts = _counts({"find": 9, "size": 3, "plain": 7, "number": 8, "suffix": 2, "unit": 4})
    found = check("With find -size and a plain number, what unit is it?", evidence, counts)
    assert not found.uncovered and not found.refused


def test_a_path_is_held_when_the_evidence_holds_one_of_its_parts() -> None:
    evidence = [_hit("resolv.conf lists up to MAXNS name servers.")]
    counts = _counts({"etc": 40, "resolv": 5, "conf": 30, "maxn": 1})
    found = check("How many name servers can /etc/resolv.conf hold?", evidence, counts)
    assert "etc" not in found.uncovered and not found.refused


def test_an_identifier_is_a_name_and_an_english_compound_is_not() -> None:
    terms = {k.word: k.name for k in key_terms("cancel systemd-run jobs or the built-in time")}
    assert terms["systemd"] and not terms["built"]
    # The collection holds "systemd" and "run" (other pages; here the evidence too), never
    # "systemd-run": the identifier is looked for as written, and is not mentioned.
    evidence = [_hit("atrm deletes jobs. systemd starts units; run them with systemctl.")]
    counts = _counts({"systemd": 4, "cancel": 2, "job": 9, "schedul": 3})
    found = check("How do I cancel a job scheduled with systemd-run?", evidence, counts)
    assert found.uncovered == ["systemd-run"]


def test_a_path_is_looked_for_by_its_file_name_as_written() -> None:
    # Porter stems "resolved" to the "resolv" of resolv.conf: the parts would pass.
    evidence = [_hit("/etc/resolv.conf lists up to MAXNS name servers.")]
    counts = _counts({"etc": 40, "resolv": 5, "conf": 30, "systemd": 3, "server": 9, "go": 2})
    found = check("How many servers go in /etc/systemd/resolved.conf?", evidence, counts)
    assert found.uncovered == ["resolved.conf"]
    found = check("How many servers go in /etc/resolv.conf?", evidence, counts)
    assert not found.uncovered


def test_values_and_single_letters_are_not_key_terms() -> None:
    # Real questions: "清理到只占 500M 以内" (a value the user picks), "Ctrl+A" (a letter no index
    # holds): both were "not mentioned", and right answers refused.
    zh = key_terms("journalctl 怎么把归档日志清理到只占 500M 以内？")
    ru = key_terms("В Double Commander не работает Ctrl+A. Где это включить?")
    assert not {"500M", "m", "a"} & {k.word for k in zh + ru}


def test_a_dotted_name_is_held_by_its_parts_and_a_generic_compound_is_no_identifier() -> None:
    # Real questions: subprocess.run (documented as run() under "subprocess"), a
    # "command-line switch": both answered, then refused as not mentioned.
    evidence = [_hit("subprocess: run(args) returns a CompletedProcess of the child.")]
    counts = _counts({"subprocess": 9, "run": 9, "return": 5, "child": 3})
    assert not check("What does subprocess.run return?", evidence, counts).uncovered
    terms = {k.word: k.name for k in key_terms("Which command-line switch opens it?")}
    assert terms.get("line") is not True


def test_numbers_are_values_and_only_a_unit_after_one_goes_with_it() -> None:
    # "900 charge cycles": the user's count, which the warranty's "800 cycles" answers.
    terms = [k.word for k in key_terms("Is 900 charge cycles covered, or 993 for ssh in 30 GiB?")]
    assert "ssh" in terms and "charge" in terms
    assert not {"900", "993", "30", "GiB"} & set(terms)


def test_a_joined_name_the_sources_lack_is_unsupported_once_and_spelled_loosely() -> None:
    evidence = [_hit("NetworkManager connects to WiFi networks; nmcli lists them.")]
    counts = _counts({"connect": 4, "wi": 0, "fi": 0, "networkmanag": 3})
    found = check("How do I connect to Wi-Fi with NetworkManager?", evidence, counts)
    assert not found.uncovered
    evidence = [_hit("atrm deletes jobs, identified by their job number.")]
    counts = _counts({"cancel": 2, "job": 9, "schedul": 3, "systemd": 4, "run": 9})
    found = check("How do I cancel a job scheduled with systemd-run?", evidence, counts)
    assert found.uncovered == ["systemd-run"] and not found.absent and not found.refused


def test_no_more_than_max_terms_are_checked() -> None:
    question = " ".join(f"Word{i}x" for i in range(40))
    assert len(key_terms(question)) == MAX_TERMS
