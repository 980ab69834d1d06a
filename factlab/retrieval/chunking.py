"""Split page text into chunks, always as (start, end) character spans (paragraphs and sentences: matching.segment).

Spans index the page text itself, so `page[start:end]` is the chunk text and evidence offsets stay exact.

>>> page = "First point. Second point!\\n\\n第二段。还有一句？"
>>> [page[s:e] for s, e in chunk_spans(page, max_chars=30)]
['First point. Second point!', '第二段。还有一句？']
"""

from __future__ import annotations

from factlab.matching.segment import paragraph_spans, sentence_spans, trim_span  # the splitting itself


def _hard_split(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut an over-long sentence into pieces of at most max_chars, at the last space when there is one."""
    pieces = []
    while end - start > max_chars:
        cut = text.rfind(" ", start + 1, start + max_chars + 1)
        cut = cut if cut > start else start + max_chars
        if (span := trim_span(text, start, cut)) is not None:
            pieces.append(span)
        start = cut
    if (span := trim_span(text, start, end)) is not None:
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
