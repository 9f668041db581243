"""Language handling for lexical search: script-based detection and per-script tokens.

Importing this package is cheap: jieba and the Snowball stemmers load on first use
(or on :func:`load_tokenizers`, which servers call while warming up).
"""

from knowhub.lang.detect import detect_language, query_language
from knowhub.lang.names import question_names
from knowhub.lang.tokenize import count_tokens, index_tokens, load_tokenizers, query_tokens

__all__ = [
    "count_tokens",
    "detect_language",
    "index_tokens",
    "load_tokenizers",
    "query_language",
    "query_tokens",
    "question_names",
]
