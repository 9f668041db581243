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


def test_chinese_wrapped_at_a_pages_width_is_joined_but_short_lines_stand_alone() -> None:
    # debian-edu's PDF manual: the sentence runs on over a line break with no case to tell.
    first = "如果不适用 LTSP 客户端，那么简单的解决方案是创建新的用户组并且在机器的"
    page = (
        f"{first} /etc/ssh/sshd_config\n"
        "文件中添加行。然后只有 sshusers 用户组的成员被允许从任何地方 ssh 到机器上。"
    )
    assert sentences(page) == [
        f"{first} /etc/ssh/sshd_config 文件中添加行。",
        "然后只有 sshusers 用户组的成员被允许从任何地方 ssh 到机器上。",
    ]
    wrapped = "在默认情况下系统不会发送任何电子邮件通知给管理员或者其他的\n用户，这需要另外配置。"
    assert sentences(wrapped) == [
        "在默认情况下系统不会发送任何电子邮件通知给管理员或者其他的用户，这需要另外配置。"
    ]
    assert sentences("安装步骤\n下载镜像\n写入U盘") == ["安装步骤", "下载镜像", "写入U盘"]
    # A heading of twenty characters and more above the text: shorter than the text's lines.
    heading = "第三章 安装步骤和系统要求以及一些注意事项说明"
    text = (
        "首先下载镜像文件，然后把它写入 U 盘，再从 U 盘启动计算机进行安装，这一步大约需要二十分钟。"
    )
    assert sentences(f"{heading}\n{text}") == [heading, text]


def test_chinese_wrapped_under_a_wider_latin_line_is_joined_by_columns_not_characters() -> None:
    # journalctl(1) in Chinese: the option line has more characters than the Han lines
    # wrapped under it, yet fewer columns; counted in characters, the lines stood apart and
    # an answer quoted "…用于清理日志归档文件(并不清理活" cut mid-word.
    page = (
        "--vacuum-size=, --vacuum-time=, --vacuum-files=\n"
        "这些选项并不用于显示日志内容， 而是用于清理日志归档文件(并不清理活\n"
        "动的日志文件)， 以释放磁盘空间。"
    )
    assert sentences(page)[-1] == (
        "这些选项并不用于显示日志内容， 而是用于清理日志归档文件(并不清理活动的日志文件)，"
        " 以释放磁盘空间。"
    )
