"""Split text into paragraphs and sentences, always as (start, end) character spans into the text itself (pure: the
stage programs, the pipeline and retrieval's chunking split text the same way).

>>> page = "First point. Second point!\\n\\n第二段。还有一句？"
>>> [page[s:e] for s, e in sentence_spans(page)]
['First point.', 'Second point!', '第二段。', '还有一句？']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from factlab.matching.text import similarity

# A sentence ends at . ! ? ; followed by space, or at a Chinese 。！？； (closing quotes/brackets stay with it).
_SENTENCE_END_RE = re.compile(r"(?:[.!?]+[\"'”’)\]]*(?=\s)|[。！？；]+[”’」』）)\]]*)")
_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A period after these words (or after a single capital, an initial) does not end the sentence.
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st no vs fig al e.g i.e etc approx inc ltd co jr sr u.s u.k".split())


def trim_span(text: str, start: int, end: int) -> tuple[int, int] | None:
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
        if (span := trim_span(text, start, match.start())) is not None:
            spans.append(span)
        start = match.end()
    if (span := trim_span(text, start, len(text))) is not None:
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
            if (span := trim_span(text, cursor, match.end())) is not None:
                spans.append(span)
            cursor = match.end()
        if (span := trim_span(text, cursor, para_end)) is not None:
            spans.append(span)
    return spans


def _ends_in_abbreviation(text: str, cursor: int, match: re.Match) -> bool:
    """True when the '.' of `match` closes an abbreviation or an initial, not a sentence."""
    if not match.group().startswith("."):
        return False
    words = text[cursor : match.start()].split()
    word = words[-1].lower().lstrip("(\"'“") if words else ""
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def containing(spans: Sequence[tuple[int, int]], offset: int) -> int | None:
    """Index of the span holding `offset` (the nearest one before it when it falls between spans).

    >>> containing([(0, 4), (6, 9)], 7), containing([(0, 4), (6, 9)], 5), containing([], 3)
    (1, 0, None)
    """
    best = None
    for index, (start, end) in enumerate(spans):
        if start <= offset < end:
            return index
        if start <= offset:
            best = index
    return best if best is not None else (0 if spans else None)


# A sentence that ends in Chinese punctuation (or a CJK character) is followed by the next one without a space.
_CJK_END_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff。！？；：，、”’」』）]")


def join_sentences(sentences: Sequence[str]) -> str:
    """Sentences back into one text: a space after a Latin sentence, none after a Chinese one (Chinese writes no
    space between sentences).

    >>> join_sentences(["A rose 5%.", "B fell."])
    'A rose 5%. B fell.'
    >>> join_sentences(["营收增长5%。", "利润下降。", "Acme grew."])
    '营收增长5%。利润下降。Acme grew.'
    >>> join_sentences(["Acme grew.", "利润下降。"]), join_sentences([" x ", ""])
    ('Acme grew. 利润下降。', 'x')
    """
    out = ""
    for sentence in (s.strip() for s in sentences):
        if not sentence:
            continue
        out += ("" if not out or _CJK_END_RE.fullmatch(out[-1]) else " ") + sentence
    return out


def sentence_rows(paragraph: dict) -> list[dict]:
    """The sentences of a paragraph as rows {"text", "start", "end"} (document offsets), headings skipped."""
    return [{"text": paragraph["text"][a:b].strip(), "start": paragraph["start"] + a, "end": paragraph["start"] + b}
            for a, b in line_sentence_spans(paragraph["text"])]


def checkable_sentences(document: str) -> bool:
    r"""Whether a document has any sentence to check (Markdown headings alone state no claim).

    >>> checkable_sentences("# Title\n\n## Part two"), checkable_sentences("# Title\nIt rose 2% in 2020.")
    (False, True)
    """
    return bool(line_sentence_spans(document))


def line_sentence_spans(text: str) -> list[tuple[int, int]]:
    r"""Sentence spans of a paragraph, line by line, skipping Markdown headings (titles state no claim).

    >>> t = "# Title\nFirst one. Second one.\n- item three"
    >>> [t[a:b] for a, b in line_sentence_spans(t)]
    ['First one.', 'Second one.', 'item three']
    """
    spans, pos = [], 0
    for line in text.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        body = line.strip()
        if not body or body.startswith("#"):
            continue
        marker = re.match(r"\s*([-*+]|\d+[.)])\s+", line)
        offset = start + (marker.end() if marker else 0)
        spans += [(offset + a, offset + b) for a, b in sentence_spans(text[offset:pos])
                  if text[offset + a:offset + b].strip()]
    return spans


def source_sentence(claim: str, rows: list[dict]) -> str:
    """The check-worthy sentence a claim most likely came from (highest token overlap)."""
    worthy = [r["text"] for r in rows if r["checkworthy"]] or [r["text"] for r in rows]
    return max(worthy, key=lambda s: similarity(claim, s), default="")
