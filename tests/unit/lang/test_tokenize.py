import os
import subprocess
import sys

import pytest

from knowhub.lang import count_tokens, index_tokens, query_tokens

FTS5_SYNTAX = set("\"'*^:()+-{}[],.")


def test_english_words_are_lowercased_and_porter_stemmed() -> None:
    assert index_tokens("Running Dogs CONNECTED") == ["run", "dog", "connect"]


def test_english_stopwords_are_checked_before_stemming() -> None:
    assert index_tokens("This is the way it was") == ["wai"]
    # "wills" is no stopword, even though its stem "will" is one.
    assert index_tokens("wills") == ["will"]


def test_russian_words_are_stemmed_with_yo_folded() -> None:
    assert index_tokens("Ёлки зелёные") == index_tokens("елки зеленые")
    assert index_tokens("резервные копии") == ["резервн", "коп"]


def test_russian_stopwords_are_dropped() -> None:
    assert index_tokens("и в на что это") == []


def test_chinese_is_segmented_into_words() -> None:
    tokens = index_tokens("我们在北京大学学习自然语言处理")
    assert "北京大学" in tokens
    assert "处理" in tokens


def test_a_chinese_query_word_also_looks_up_the_words_inside_it() -> None:
    # jieba keeps "相对路径" whole in a question, while ln(1) says "创建相对于链接位置的符号链接"
    # and is indexed under "相对": the query looks up both, as jieba's search mode would.
    assert "相对" in index_tokens("-r, --relative: 创建相对于链接位置的符号链接")
    tokens = query_tokens("能不能让它自动算出相对路径")
    assert tokens[tokens.index("相对路径") :] == ["相对路径", "相对", "路径"]
    assert query_tokens("命令行参数") == ["命令行", "参数", "命令"]  # three characters: "命令"
    assert "相对" not in index_tokens("能不能让它自动算出相对路径")  # the index keeps words whole
    assert query_tokens("相对路径", joined=False) == ["相对路径"]  # term shares count words once


def test_chinese_function_words_are_dropped() -> None:
    tokens = index_tokens("今天的天气是很好的，我们在家里。")
    assert not {"的", "是", "在", "我们"} & set(tokens)
    assert "天气" in tokens


def test_mixed_language_text_is_tokenized_per_script_run() -> None:
    tokens = index_tokens("Install 知识库 via pip, затем запустите сервер.")
    assert tokens[:2] == ["instal", "知识库"]
    assert "pip" in tokens
    assert "сервер" in tokens


def test_numbers_are_kept_and_stick_to_adjacent_letters() -> None:
    assert index_tokens("Released 2024, version 3.5") == ["releas", "2024", "version", "3", "5"]
    assert index_tokens("p53 in the 1990s") == ["p53", "1990"]


def test_kana_and_hangul_runs_become_character_bigrams() -> None:
    assert index_tokens("カタカナ") == ["カタ", "タカ", "カナ"]
    assert index_tokens("세계 안녕") == ["세계", "안녕"]
    assert index_tokens("の") == ["の"]


def test_full_width_forms_match_their_ascii_forms() -> None:
    assert index_tokens("ＫＮＯＷＨＵＢ　２０２４") == index_tokens("knowhub 2024")


def test_tokens_carry_no_whitespace_or_fts5_syntax() -> None:
    texts = [
        'title:"quoted" AND (x OR y*) ^near NOT z-1 {a b} [c]',
        "C++ and C# aren't Rust's e.g. foo.bar@example.com https://x.io/a?b=c",
        "「引用」（括号）“中文”：冒号；分号！感叹？\t\n换行",
        "Это «цитата» — тире, да.",
        "Ctrl+Shift+T, Alt - F4, ⌘-Q",
    ]
    for text in texts:
        for token in index_tokens(text):
            assert token
            assert not any(char.isspace() for char in token), token
            assert not FTS5_SYNTAX & set(token), token


def test_a_key_chord_is_one_term_too() -> None:
    # Its key alone is a stopword ("a") or a letter: without the chord's own term a
    # question about Ctrl+A matched every passage saying "Ctrl" (Double Commander's FAQ).
    assert query_tokens("Ctrl+A не работает") == ["ctrl", "работа", "ctrla"]
    assert "ctrlshiftt" in index_tokens("Press Ctrl + Shift + T to reopen a tab")
    assert "altf4" in index_tokens("Alt-F4 closes it; 按 Ctrl-C 复制")
    assert "ctrlc" in index_tokens("Alt-F4 closes it; 按 Ctrl-C 复制")
    assert index_tokens("Control the shift of ctrl keys") == ["control", "shift", "ctrl", "kei"]


def test_a_word_of_joined_parts_is_one_term_too() -> None:
    # Its parts alone matched PostgreSQL's tcp_keepalives_idle as well as the kernel's
    # tcp_keepalive_time; an option keeps its name without its dashes.
    assert query_tokens("tcp_keepalive_time") == ["tcp", "keepal", "time", "tcpkeepalivetime"]
    assert "tcpkeepalivesidle" in index_tokens("tcp_keepalives_idle (integer)")
    assert "tcpkeepalivetime" not in index_tokens("tcp_keepalives_idle (integer)")
    assert query_tokens("--no-splash") == ["splash", "nosplash"]
    assert query_tokens("systemd-run --user") == ["systemd", "run", "user", "systemdrun"]
    # A range is no number, a word ends where its letters do, a chord needs its key.
    assert query_tokens("1-2 days") == ["1", "2", "dai"]
    assert query_tokens("tcp_keepalive_timé") == ["tcp", "keepal", "timé"]
    assert query_tokens("press alt - then") == ["press", "alt"]
    # Term shares leave them out: a compound would count twice.
    assert query_tokens("Ctrl+A on tcp_keepalive_time by e-mail", joined=False) == [
        "ctrl",
        "tcp",
        "keepal",
        "time",
        "e",
        "mail",
    ]


def test_query_tokens_are_normalised_like_index_tokens_and_deduplicated() -> None:
    text = "Backups, backups and BACKUP policies for 备份 备份 策略"
    assert query_tokens(text) == list(dict.fromkeys(index_tokens(text)))
    assert query_tokens(text).count("backup") == 1


def test_a_query_of_only_stopwords_has_no_tokens() -> None:
    assert query_tokens("what is the?") == []
    assert query_tokens("是什么？") == []


def test_count_tokens_counts_words_and_cjk_characters() -> None:
    assert count_tokens("Hello, world!") == 2
    assert count_tokens("你好。") == 2
    assert count_tokens("Привет, мир") == 2
    assert count_tokens("東京はカ 안녕") == 6
    assert count_tokens("version 3.5") == 3
    assert count_tokens(" ... — !") == 0
    assert count_tokens("") == 0


def test_jieba_loads_on_first_chinese_text_and_stays_silent() -> None:
    script = (
        "import sys\n"
        "from knowhub.lang import index_tokens\n"
        "assert 'jieba' not in sys.modules, 'importing knowhub.lang loaded jieba'\n"
        "index_tokens('plain English text')\n"
        "assert 'jieba' not in sys.modules, 'English text loaded jieba'\n"
        "assert index_tokens('自然语言处理')\n"
        "assert 'jieba' in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == ""


def _run_python(script: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


# Counts how often a jieba dictionary is loaded in a fresh interpreter.
COUNT_JIEBA_LOADS = (
    "import threading, jieba\n"
    "loads = []\n"
    "original = jieba.Tokenizer.initialize\n"
    "def counting(self, *args, **kwargs):\n"
    "    loads.append(1)\n"
    "    return original(self, *args, **kwargs)\n"
    "jieba.Tokenizer.initialize = counting\n"
    "from knowhub.lang import query_tokens\n"
)


def test_concurrent_first_use_loads_jieba_once() -> None:
    script = COUNT_JIEBA_LOADS + (
        "barrier = threading.Barrier(16)\n"
        "results = []\n"
        "def work():\n"
        "    barrier.wait()\n"
        "    results.append(tuple(query_tokens('年假有多少天')))\n"
        "threads = [threading.Thread(target=work) for _ in range(16)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join(timeout=100)\n"
        "print(len(loads), len(results), len(set(results)))\n"
    )
    assert _run_python(script).split() == ["1", "16", "1"]


def test_load_tokenizers_loads_jieba_before_any_text() -> None:
    script = COUNT_JIEBA_LOADS + (
        "from knowhub.lang import load_tokenizers\n"
        "load_tokenizers()\n"
        "print(len(loads))\n"
        "query_tokens('年假有多少天'); load_tokenizers()\n"
        "print(len(loads))\n"
    )
    assert _run_python(script).split() == ["1", "1"]


def test_stem_caches_are_bounded_and_skip_long_words() -> None:
    from knowhub.lang import tokenize

    for cached in (tokenize._latin_cached, tokenize._cyrillic_cached):
        assert cached.cache_info().maxsize == tokenize._STEM_CACHE_SIZE
    before = tokenize._latin_cached.cache_info().currsize
    words = [f"{'x' * 100}{n}" for n in range(50)]  # hostile: long and all different
    assert index_tokens(" ".join(words)) == words  # still stemmed (nothing to strip)
    assert tokenize._latin_cached.cache_info().currsize == before


@pytest.fixture
def tokenized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts actually tokenized (not answered from the recent texts) from now on."""
    from knowhub.lang import tokenize

    calls: list[str] = []
    terms = tokenize._terms

    def counting(text: str) -> tuple[list[str], list[str]]:
        calls.append(text)
        return terms(text)

    monkeypatch.setattr(tokenize, "_terms", counting)
    tokenize._recent_terms.cache_clear()  # texts earlier tests tokenized count too
    return calls


def test_a_text_tokenized_again_is_not_tokenized_twice(tokenized: list[str]) -> None:
    text = "Snapshots of the replicated database run every six hours."
    first = index_tokens(text)
    first.append("changed by its caller")  # each call gets a list of its own
    expected = ["snapshot", "replic", "databas", "run", "everi", "six", "hour"]
    assert index_tokens(text) == expected
    assert tokenized == [text]


def test_whole_file_texts_are_not_kept_for_reuse(tokenized: list[str]) -> None:
    from knowhub.lang import tokenize

    text = "word " * (tokenize._CACHED_TEXT_CHARS // 5 + 1)
    assert index_tokens(text) == index_tokens(text)
    assert tokenized == [text, text]


def test_an_amount_written_apart_from_its_unit_is_one_term_too() -> None:
    # The Debian Edu manual says "扩展 home0 到 30GiB": a question saying "30 GiB" missed it.
    assert query_tokens("extend home0 to 30 GiB") == ["extend", "home0", "30", "gib", "30gib"]
    assert "30gib" in index_tokens("扩展 home0 到 30GiB")
    assert "30gib" in index_tokens("工作站或独立系统：30 GiB。") + index_tokens("到30 GiB")
    assert "512мб" in index_tokens("не больше 512 МБ и 100 мс")
    assert "100мс" in index_tokens("не больше 512 МБ и 100 мс")
    # The term is the one the amount written together gets, stemmed alike.
    assert index_tokens("100 ms")[-1] in index_tokens("100ms")
    assert index_tokens("100 Mbps")[-1] in index_tokens("100Mbps")
    # Only a unit of two letters or more, standing alone, after a whole number standing
    # alone: not a word ("1 с помощью", "top 5 us"), a decimal, a time, thousands.
    assert index_tokens("in 1 and 2 steps") == ["1", "2", "step"]
    assert "30gigabyt" not in index_tokens("30 Gigabytes")
    assert index_tokens("шаг 1 с помощью") == ["шаг", "1", "помощ"]
    assert "5u" not in index_tokens("top 5 us cities")
    for text in ("version 3.11 ms", "x3 11 ms-curve", "10:30 ms", "1 024 МБ", "1,5 ГБ"):
        extra = index_tokens(text)[len(index_tokens(text, joined=False)) :]
        assert not any(term[0].isdigit() for term in extra), text
    assert query_tokens("30 GiB", joined=False) == ["30", "gib"]


def test_a_long_chain_of_joiners_is_tokenized_in_one_pass() -> None:
    # Every "a" after a "-" was a new start scanning the rest of the chain, and a final "é"
    # made each scan fail: 100k characters took 99 s. A match starts only where no "-"
    # precedes it, and gives nothing back.
    chain = "b-" * 20_000 + "é"
    assert index_tokens(chain).count("b") == 20_000
    assert "ctrla" not in index_tokens("ctrl+ " * 10_000)
    assert index_tokens("1 " * 20_000 + "gib")[-1] == "gib"  # a run of numbers joins none
