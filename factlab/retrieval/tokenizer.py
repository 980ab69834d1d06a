"""One tokenizer for every lexical job of retrieval (BM25, lexical coverage, compression, token budgets).

Chinese runs are cut by jieba, everything else becomes lower-cased words; numbers keep their decimal
point and lose thousands separators, so "3,000" in a claim matches "3000" in a source.

>>> tokenize("Penicillin was discovered in 1928 by Fleming.")
['penicillin', 'was', 'discovered', 'in', '1928', 'by', 'fleming']
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata

from factlab.matching.text import STOPWORDS

# A CJK run (unified ideographs + extension A) or a latin/number word; everything else separates tokens.
_TOKEN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+|[a-z0-9]+(?:[.,'][a-z0-9]+)*")
_CJK_CHAR_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_POSSESSIVE_RE = re.compile(r"(?<=[a-z])['’]s\b")



@functools.cache
def _jieba():
    """Import jieba once, lazily, and quiet its dictionary-building chatter."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def tokenize(text: str) -> list[str]:
    """Split text into BM25 tokens: jieba words for Chinese, lower-cased words and numbers for the rest.

    Args:
        text: Chinese, English or mixed text.

    Returns:
        Tokens in reading order; punctuation and whitespace are dropped.

    >>> tokenize("世界卫生组织2023年报告称, 3,000 cases.")
    ['世界卫生组织', '2023', '年', '报告', '称', '3000', 'cases']
    >>> tokenize("Caldera's central bank")
    ['caldera', 'central', 'bank']
    >>> tokenize("")
    []
    """
    text = _THOUSANDS_RE.sub("", unicodedata.normalize("NFKC", text).lower())
    text = _POSSESSIVE_RE.sub("", text)
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        run = match.group()
        if _CJK_CHAR_RE.match(run):
            tokens.extend(word for word in _jieba().lcut(run, HMM=True) if word.strip())
        else:
            tokens.append(run.rstrip(".,'"))
    return tokens


def content_tokens(text: str) -> set[str]:
    """The distinct tokens of `text` that are not stopwords: what plain lexical overlap compares.

    >>> sorted(content_tokens("The drug reduced the mortality"))
    ['drug', 'mortality', 'reduced']
    """
    return {token for token in tokenize(text) if token not in STOPWORDS}
