"""Gold outputs of every pipeline stage for one case, shaped as the pipeline's `fixed=` hooks take them.

A case's gold is written against its own paragraph split; the pipeline's may differ, so document-level gold is
mapped onto the PREDICTED paragraphs by character offsets (a claim belongs to the predicted paragraph holding its
source sentence). Pure functions over case dicts and traces: no LM, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from factlab.matching.segment import containing
from factlab.matching.text import similarity
from factlab.schema import Evidence, Judgment

NON_DECISIVE = ("irrelevant", "insufficient")  # one class when comparing a snippet's relation with gold
_DECISIVE_ORDER = ("contradict", "support", "partial_support", "insufficient", "irrelevant")


def gold_spans(case: Mapping) -> list[tuple[int, int]]:
    """The case's gold paragraph spans; the whole text when it has none.

    >>> gold_spans({"text": "abc"})
    [(0, 3)]
    >>> gold_spans({"text": "ab cd", "paragraphs": [[0, 2], [3, 5]]})
    [(0, 2), (3, 5)]
    """
    spans = case.get("paragraphs") or [[0, len(case["text"])]]
    return [(int(a), int(b)) for a, b in spans]


def gold_paragraphs(case: Mapping) -> list[dict]:
    """Gold paragraphs as the pipeline's `paragraphs` stage returns them: {"start", "end", "text"}.

    >>> gold_paragraphs({"text": "ab cd", "paragraphs": [[0, 2], [3, 5]]})[1]
    {'start': 3, 'end': 5, 'text': 'cd'}
    """
    return [{"start": a, "end": b, "text": case["text"][a:b]} for a, b in gold_spans(case)]


def claim_offset(case: Mapping, claim: Mapping) -> int:
    """Character offset of a gold claim in the case text: its source sentence, else its own text, else the start
    of its gold paragraph.

    >>> claim_offset({"text": "A b. C d."}, {"text": "C d", "sentence": "C d."})
    5
    >>> claim_offset({"text": "A b. C d.", "paragraphs": [[0, 4], [5, 9]]}, {"text": "zz", "paragraph": 1})
    5
    """
    text = case["text"]
    for probe in (claim.get("sentence"), claim.get("text")):
        if probe and probe in text:
            return text.index(probe)
    spans = gold_spans(case)
    index = claim.get("paragraph", 0)
    return spans[index][0] if 0 <= index < len(spans) else 0


def span_overlap(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Intersection over union of two character spans.

    >>> span_overlap((0, 10), (5, 15))
    0.3333333333333333
    >>> span_overlap((0, 4), (0, 4))
    1.0
    """
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0


def gold_claims(case: Mapping) -> list[dict]:
    """The gold claims the pipeline should find: check-worthy ones.

    >>> [c["claim_id"] for c in gold_claims({"claims": [{"claim_id": "c1"}, {"claim_id": "c2", "checkworthy": False}]})]
    ['c1']
    """
    return [claim for claim in case.get("claims", []) if claim.get("checkworthy", True)]


def gold_sentence_flag(case: Mapping, text: str) -> tuple[bool, str] | None:
    """The gold check-worthiness (flag, reason) of a sentence, by exact text or best overlap (>= 0.8).

    >>> case = {"sentences": [{"text": "Hi there.", "checkworthy": False, "reason": "greeting"}]}
    >>> gold_sentence_flag(case, "Hi there.")
    (False, 'greeting')
    """
    rows = case.get("sentences", [])
    for row in rows:
        if row["text"].strip() == text.strip():
            return bool(row["checkworthy"]), row.get("reason", "")
    scored = [(similarity(row["text"], text), row) for row in rows]
    score, row = max(scored, key=lambda t: t[0], default=(0.0, None))
    return (bool(row["checkworthy"]), row.get("reason", "")) if row is not None and score >= 0.8 else None


def gold_sentence_rows(case: Mapping, rows: Sequence[dict]) -> list[dict]:
    """The predicted paragraph's sentence rows with gold check-worthiness (the `checkworthy` fixed hook).

    A sentence without gold keeps its predicted flag.
    """
    out = []
    for row in rows:
        gold = gold_sentence_flag(case, row["text"])
        flag, reason = gold if gold is not None else (row["checkworthy"], row.get("reason", ""))
        out.append({**row, "checkworthy": flag, "reason": reason})
    return out


def claims_by_paragraph(case: Mapping, paragraphs: Sequence[Mapping]) -> list[list[dict]]:
    """Gold claims grouped by the predicted paragraph that holds their source sentence."""
    spans = [(p["start"], p["end"]) for p in paragraphs]
    out: list[list[dict]] = [[] for _ in paragraphs]
    for claim in gold_claims(case):
        index = containing(spans, claim_offset(case, claim))
        if index is not None:
            out[index].append(claim)
    return out


def chunk_relations(claim: Mapping) -> dict[str, list[str]]:
    """Gold relations per evidence chunk id (a chunk may hold several gold sentences), most decisive first.

    >>> chunk_relations({"evidence": [{"chunk_id": "a", "relation": "support"}, {"chunk_id": "a",
    ...                                "relation": "contradict"}]})
    {'a': ['contradict', 'support']}
    """
    out: dict[str, list[str]] = {}
    for item in claim.get("evidence", []):
        out.setdefault(item["chunk_id"], []).append(item["relation"])
    return {k: sorted(set(v), key=_DECISIVE_ORDER.index) for k, v in out.items()}


def relation_class(relation: str) -> str:
    """The class a relation is compared in: irrelevant and insufficient are one (neither decides a label).

    >>> relation_class("insufficient"), relation_class("support")
    ('non_decisive', 'support')
    """
    return "non_decisive" if relation in NON_DECISIVE else relation


def snippet_agrees(relation: str, gold: Sequence[str]) -> bool:
    """A judged snippet agrees with gold when its class is one of the chunk's gold classes; a chunk without gold
    counts as non-decisive.

    >>> snippet_agrees("irrelevant", []), snippet_agrees("support", []), snippet_agrees("support", ["support"])
    (True, False, True)
    """
    return relation_class(relation) in ({relation_class(g) for g in gold} or {"non_decisive"})


def gold_evidence(claim: Mapping, sources: Mapping[str, object]) -> list[Evidence]:
    """The gold evidence of a claim as retrieval returns it (the `retrieval` fixed hook); tier and domain from the
    indexed source when the gold item has none."""
    out = []
    for item in claim.get("evidence", []):
        source = sources.get(item["source_id"])
        tier = item.get("tier", getattr(source, "tier", 3))
        out.append(Evidence(source_id=item["source_id"], chunk_id=item["chunk_id"], text=item["text"], tier=int(tier),
                            domain=getattr(source, "domain", ""), title=getattr(source, "title", ""), score=1.0))
    return out


def gold_judgments(claim: Mapping, evidence: Sequence[Evidence]) -> list[Judgment]:
    """Gold judgments of the snippets the pipeline retrieved (the `judge` fixed hook); confidence 1.0.

    A chunk holding several gold sentences gets the claim's own gold relation when one of them has it (so the rules
    reach the gold label), else its most decisive one; a chunk the gold does not name is `irrelevant`.

    >>> claim = {"relation": "support", "evidence": [{"chunk_id": "a", "relation": "partial_support"},
    ...                                              {"chunk_id": "a", "relation": "support"}]}
    >>> [j.relation for j in gold_judgments(claim, [Evidence("s", "a", "t"), Evidence("s", "b", "t")])]
    ['support', 'irrelevant']
    """
    relations = chunk_relations(claim)
    out = []
    for item in evidence:
        gold = relations.get(item.chunk_id) or ["irrelevant"]
        out.append(Judgment(claim.get("relation") if claim.get("relation") in gold else gold[0], 1.0, "gold"))
    return out
