"""Stage `paragraphs`: document -> semantic paragraphs with character offsets into the original text.

Deterministic by default: split on Markdown structure, merge fragments (list items, one-line headings,
short lead-ins), split over-long blocks at sentence ends. An optional LM pass merges adjacent blocks
that continue one topic.

    python -m factlab.cli stage paragraphs --file datasets/bundled/examples/report_en_short.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import dspy

from factlab.matching.text import count_tokens
from factlab.metrics import f1
from factlab.untrusted import neutralise

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)]|[（(]?[一二三四五六七八九十\d]+[)）、.])\s*")
_FENCE = re.compile(r"^\s*```")
_SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=[.;；])\s")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str  # heading | list | code | text


def _blocks(text: str) -> list[Span]:
    """Blocks separated by blank lines; headings and list runs are blocks of their own kind."""
    spans: list[Span] = []
    pos, cur_start, cur_kind, in_code = 0, None, None, False
    for line in text.splitlines(keepends=True):
        start, stripped = pos, line.strip()
        pos += len(line)
        if _FENCE.match(line):
            in_code = not in_code
            if cur_start is None:
                cur_start, cur_kind = start, "code"
            continue
        if in_code:
            continue
        kind = "heading" if _HEADING.match(line) else "list" if _LIST_ITEM.match(line) and stripped else "text"
        if not stripped or kind == "heading" or (cur_kind is not None and kind != cur_kind and cur_kind != "code"):
            if cur_start is not None:
                spans.append(Span(cur_start, start, cur_kind))
                cur_start, cur_kind = None, None
        if not stripped:
            continue
        if kind == "heading":
            spans.append(Span(start, pos, "heading"))
            continue
        if cur_start is None:
            cur_start, cur_kind = start, kind
    if cur_start is not None:
        spans.append(Span(cur_start, pos, cur_kind))
    return [_trim(text, s) for s in spans if text[s.start:s.end].strip()]


def _trim(text: str, span: Span) -> Span:
    start, end = span.start, span.end
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Span(start, end, span.kind)


def _merge_fragments(text: str, spans: list[Span], min_tokens: int) -> list[Span]:
    """Glue headings and short lead-ins to what follows, and list runs to their lead-in."""
    out: list[Span] = []
    carry: Span | None = None
    for span in spans:
        if carry is not None:
            span = Span(carry.start, span.end, span.kind if span.kind != "heading" else "text")
            carry = None
        body = text[span.start:span.end]
        lead_in = span.kind == "text" and body.rstrip().endswith((":", "：")) and count_tokens(body) < 60
        if span.kind == "heading" or lead_in:
            carry = span
            continue
        prev_is_lead_in = out and text[out[-1].start:out[-1].end].rstrip().endswith((":", "："))
        if span.kind == "list" and prev_is_lead_in and out[-1].kind in ("text", "list"):
            out[-1] = Span(out[-1].start, span.end, "text")
            continue
        if out and count_tokens(body) < min_tokens and out[-1].kind != "code":
            out[-1] = Span(out[-1].start, span.end, out[-1].kind)
            continue
        out.append(span)
    if carry is not None:
        out.append(carry)
    return out


def _split_long(text: str, span: Span, max_tokens: int) -> list[Span]:
    """Split a block over `max_tokens` at sentence ends into near-even pieces."""
    if count_tokens(text[span.start:span.end]) <= max_tokens:
        return [span]
    cuts = [span.start + m.end() for m in _SENTENCE_END.finditer(text[span.start:span.end])]
    pieces, start = [], span.start
    for cut in cuts + [span.end]:
        if count_tokens(text[start:cut]) > max_tokens and pieces and pieces[-1][1] > start:
            start = pieces[-1][1]
        if count_tokens(text[start:cut]) >= max_tokens or cut == span.end:
            pieces.append((start, cut))
            start = cut
    return [_trim(text, Span(a, b, span.kind)) for a, b in pieces if text[a:b].strip()]


class SameTopic(dspy.Signature):
    """Do the two consecutive passages of a report continue ONE topic, so that a reader checking facts
    should see them as one paragraph? Answer false when the second starts a new subject."""

    previous: str = dspy.InputField()
    following: str = dspy.InputField()
    same_topic: bool = dspy.OutputField()


class ParagraphSplitter(dspy.Module):
    """Split a document into semantic paragraphs.

    Args:
        max_tokens: a paragraph longer than this is split at sentence ends.
        min_tokens: a block shorter than this is merged into the previous paragraph.
        use_lm: ask the LM whether adjacent short paragraphs continue one topic, and merge them if so.
        lm_merge_max_tokens: only paragraphs this short are offered to the LM for merging.
    """

    def __init__(self, max_tokens: int = 400, min_tokens: int = 8, use_lm: bool = False,
                 lm_merge_max_tokens: int = 80) -> None:
        super().__init__()
        self.max_tokens, self.min_tokens = max_tokens, min_tokens
        self.use_lm, self.lm_merge_max_tokens = use_lm, lm_merge_max_tokens
        self.same_topic = dspy.Predict(SameTopic)

    def forward(self, document: str) -> dspy.Prediction:
        if not isinstance(document, str) or not document.strip():
            raise ValueError("paragraphs: the document is empty or whitespace only")
        spans = _merge_fragments(document, _blocks(document), self.min_tokens)
        spans = [piece for span in spans for piece in _split_long(document, span, self.max_tokens)]
        if self.use_lm:
            spans = self._lm_merge(document, spans)
        return dspy.Prediction(paragraphs=[{"start": s.start, "end": s.end, "text": document[s.start:s.end]}
                                           for s in spans])

    def _lm_merge(self, document: str, spans: list[Span]) -> list[Span]:
        merged = [spans[0]]
        for span in spans[1:]:
            prev = merged[-1]
            short = count_tokens(document[prev.start:span.end]) <= self.lm_merge_max_tokens * 2
            if short and count_tokens(document[span.start:span.end]) <= self.lm_merge_max_tokens:
                verdict = self.same_topic(previous=neutralise(document[prev.start:prev.end]),
                                          following=neutralise(document[span.start:span.end]))
                if verdict.same_topic:
                    merged[-1] = Span(prev.start, span.end, prev.kind)
                    continue
            merged.append(span)
        return merged


def _boundaries(text: str, spans: list[tuple[int, int]]) -> set[int]:
    """Paragraph start offsets after the first, moved past whitespace so splits at blank lines compare equal."""
    starts = set()
    for start, _ in sorted(spans)[1:]:
        while start < len(text) and text[start].isspace():
            start += 1
        starts.add(start)
    return starts


def _score(gold: dspy.Example, pred: dspy.Prediction) -> tuple[float, dict]:
    text = gold.document
    gold_b = _boundaries(text, [tuple(p) for p in gold.paragraphs])
    pred_b = _boundaries(text, [(p["start"], p["end"]) for p in (getattr(pred, "paragraphs", None) or [])])
    if not gold_b and not pred_b:
        return 1.0, {"missing": [], "extra": [], "precision": 1.0, "recall": 1.0}
    hit = gold_b & pred_b
    precision = len(hit) / len(pred_b) if pred_b else 0.0
    recall = len(hit) / len(gold_b) if gold_b else 0.0
    return f1(precision, recall), {"missing": sorted(gold_b - pred_b), "extra": sorted(pred_b - gold_b),
                                   "precision": precision, "recall": recall}


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
    """Boundary F1 against the gold split; feedback quotes where boundaries were missed or invented."""
    score, d = _score(gold, pred)
    text = gold.document
    parts = [f"Boundary F1 {score:.2f}."]
    parts += [f"Missed a paragraph break before {text[b:b + 40]!r}." for b in d["missing"]]
    parts += [f"Broke a paragraph that continues one topic before {text[b:b + 40]!r}." for b in d["extra"]]
    return dspy.Prediction(score=score, feedback=" ".join(parts))


def to_examples(case: dict) -> list[dspy.Example]:
    """One example per case that has a gold paragraph split."""
    if not case.get("paragraphs"):
        return []
    return [dspy.Example(document=case["text"], paragraphs=[list(p) for p in case["paragraphs"]],
                         case_id=case["case_id"], lang=case["lang"]).with_inputs("document")]
