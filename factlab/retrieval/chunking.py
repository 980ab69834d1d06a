"""Split page text into paragraphs, sentences and chunks, always as (start, end) character spans.

Spans index the page text itself, so `page[start:end]` is the chunk text and evidence offsets stay exact.

>>> page = "First point. Second point!\\n\\n第二段。还有一句？"
>>> [page[s:e] for s, e in sentence_spans(page)]
['First point.', 'Second point!', '第二段。', '还有一句？']
>>> [page[s:e] for s, e in chunk_spans(page, max_chars=30)]
['First point. Second point!', '第二段。还有一句？']
"""

from __future__ import annotations

import re

# A sentence ends at . ! ? ; followed by space, or at a Chinese 。！？； (closing quotes/brackets stay with it).
_SENTENCE_END_RE = re.compile(r"(?:[.!?]+[\"'”’)\]]*(?=\s)|[。！？；]+[”’」』）)\]]*)")
_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A period after these words (or after a single capital, an initial) does not end the sentence.
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st no vs fig al e.g i.e etc approx inc ltd co jr sr u.s u.k".split())


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Shrink [start, end) past surrounding whitespace; None when nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the paragraphs of `text` (separated by blank lines), whitespace trimmed.

    >>> paragraph_spans("  a b \\n\\n\\n c\\n")
    [(2, 5), (10, 11)]
    """
    spans, start = [], 0
    for match in _PARAGRAPH_BREAK_RE.finditer(text):
        if (span := _trim(text, start, match.start())) is not None:
            spans.append(span)
        start = match.end()
    if (span := _trim(text, start, len(text))) is not None:
        spans.append(span)
    return spans


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Spans of the sentences of `text[start:end]` (English . ! ? and Chinese 。！？；), trimmed.

    Paragraph breaks also end a sentence, so headings and list items stand alone.

    >>> text = "Dr. Li said so. 他说：“好。”然后走了"
    >>> [text[s:e] for s, e in sentence_spans(text)]
    ['Dr. Li said so.', '他说：“好。”', '然后走了']
    """
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    for para_start, para_end in paragraph_spans(text[start:end]):
        para_start, para_end = para_start + start, para_end + start
        cursor = para_start
        for match in _SENTENCE_END_RE.finditer(text, para_start, para_end):
            if _ends_in_abbreviation(text, cursor, match):
                continue
            if (span := _trim(text, cursor, match.end())) is not None:
                spans.append(span)
            cursor = match.end()
        if (span := _trim(text, cursor, para_end)) is not None:
            spans.append(span)
    return spans


def _ends_in_abbreviation(text: str, cursor: int, match: re.Match) -> bool:
    """True when the '.' of `match` closes an abbreviation or an initial, not a sentence."""
    if not match.group().startswith("."):
        return False
    words = text[cursor : match.start()].split()
    word = words[-1].lower().lstrip("(\"'“") if words else ""
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def _hard_split(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut an over-long sentence into pieces of at most max_chars, at the last space when there is one."""
    pieces = []
    while end - start > max_chars:
        cut = text.rfind(" ", start + 1, start + max_chars + 1)
        cut = cut if cut > start else start + max_chars
        if (span := _trim(text, start, cut)) is not None:
            pieces.append(span)
        start = cut
    if (span := _trim(text, start, end)) is not None:
        pieces.append(span)
    return pieces


def chunk_spans(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Pack whole paragraphs, else whole sentences, into chunks of at most `max_chars` characters.

    A paragraph longer than max_chars is split into sentences; a sentence longer than max_chars is cut at
    spaces (or hard at max_chars for unbroken Chinese text). The text between packed pieces (newlines)
    stays inside the chunk, so `text[start:end]` is always the chunk verbatim.

    Args:
        text: the page text.
        max_chars: upper bound on `end - start` of every chunk; must be positive.

    Returns:
        Ascending, non-overlapping spans covering every non-blank character of `text`.

    >>> chunk_spans("aaa bbb ccc", max_chars=7)
    [(0, 7), (8, 11)]
    >>> chunk_spans("", max_chars=800)
    []
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be a positive number of characters, got {max_chars}")
    pieces: list[tuple[int, int]] = []
    for para in paragraph_spans(text):
        if para[1] - para[0] <= max_chars:
            pieces.append(para)
            continue
        for sent_start, sent_end in sentence_spans(text, *para):
            if sent_end - sent_start <= max_chars:
                pieces.append((sent_start, sent_end))
            else:
                pieces.extend(_hard_split(text, sent_start, sent_end, max_chars))
    chunks: list[tuple[int, int]] = []
    for piece_start, piece_end in pieces:
        if chunks and piece_end - chunks[-1][0] <= max_chars:
            chunks[-1] = (chunks[-1][0], piece_end)
        else:
            chunks.append((piece_start, piece_end))
    return chunks
