"""Function words left out of the lexical index and of queries.

English and Russian follow the Snowball stop lists as shipped with NLTK. The
English one keeps the fragments our tokenizer leaves when it splits contractions
at the apostrophe (``don't`` → ``don`` ``t``); the Russian one drops the few
content words it lists (жизнь, хорошо, лучше, два, три) and adds также and the
forms of это and который it misses. Chinese is a short list of particles,
pronouns, conjunctions and question words as jieba segments them. Words are
compared after lower-casing (and ``ё`` → ``е``) but before stemming.
"""

from __future__ import annotations

__all__ = ["STOPWORDS_EN", "STOPWORDS_RU", "STOPWORDS_ZH"]


def _words(block: str) -> frozenset[str]:
    """The whitespace-separated words of ``block``, ``ё`` folded as the tokenizer does."""
    return frozenset(block.replace("ё", "е").split())


STOPWORDS_EN = _words(
    """
    a about above after again against ain all am an and any are aren as at be because
    been before being below between both but by can couldn d did didn do does doesn doing
    don down during each few for from further had hadn has hasn have haven having he her
    here hers herself him himself his how i if in into is isn it its itself just ll m ma me
    mightn more most mustn my myself needn no nor not now o of off on once only or other
    our ours ourselves out over own re s same shan she should shouldn so some such t than
    that the their theirs them themselves then there these they this those through to too
    under until up ve very was wasn we were weren what when where which while who whom why
    will with won wouldn y you your yours yourself yourselves
    """
)

STOPWORDS_RU = _words(
    """
    а без более больше будет будто бы был была были было быть в вам вас вдруг ведь во вот
    впрочем все всегда всего всех всю вы где да даже для до другой его ее ей ему если
    есть еще ж же за зачем здесь и из или им иногда их к кажется как какая какой
    когда конечно которого которые кто куда ли между меня мне много может можно мой
    моя мы на над надо наконец нас не него нее ней нельзя нет ни нибудь никогда ним них
    ничего но ну о об один он она они опять от перед по под после потом потому почти при
    про раз разве с сам свое свою себе себя сейчас со совсем так такой там тебя тем теперь
    то тогда того тоже только том тот тут ты у уж уже хоть чего чем через что
    чтоб чтобы чуть эти этого этой этом этот эту я
    это эта этих этим этими также который которая которое которой которую которым
    которыми которых
    """
)

STOPWORDS_ZH = _words(
    """
    的 了 是 在 和 与 及 或 也 就 都 而 且 又 并 但 但是 而且 或者 以及 因为 所以 如果 虽然
    之 其 此 这 那 这个 那个 这些 那些 这样 那样 这里 那里 这种 那种
    我 你 他 她 它 我们 你们 他们 她们 它们 自己
    着 过 把 被 让 给 对 从 向 于 以 为 为了 由 由于 关于 对于 按照 根据 通过
    吗 呢 吧 啊 呀 哦 嘛 么 之后 之前 之间 等 等等 个 些 得 地
    什么 怎么 怎样 如何 为什么 哪 哪个 哪些 哪里 谁 多少 几
    有 没有 不 没 很 还 再 已 已经 将 会 能 可以 要 所 则 即 即使 只 只是 还是 就是
    一个 一些 一种
    """
)
