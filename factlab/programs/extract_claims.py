"""Stage `extract_claims`: paragraph -> atomic, decontextualised claims.

    python -m factlab.cli stage extract_claims --text "Aspirin was first synthesised in 1897. It is used ..."
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import dspy

from factlab.matching.segment import containing, join_sentences, sentence_spans
from factlab.matching.text import Match, match_texts
from factlab.metrics import f1
from factlab.untrusted import neutralise

# Openers that leave the subject implicit: a claim starting with one is not decontextualised.
_PRONOUN_START = re.compile(
    r"^(it|its|they|their|this|these|that|those|he|she|his|her|the study|the company|the trial)\b"
    r"|^(它|它们|他|她|他们|她们|该|其|此|这|这些|那|该研究|该公司)",
    re.IGNORECASE,
)
# Joiners that usually glue two facts into one claim.
_COMPOUND = re.compile(r"\b(and also|while|whereas|; )\b|；|，并且|，同时|以及", re.IGNORECASE)
MATCH_THRESHOLD = 0.5  # similarity at which a predicted claim counts as the gold claim
CONTEXT_CHARS = 400  # the summary of earlier paragraphs the stage sees (conf/pipeline/default.yaml context_chars)


class ExtractClaims(dspy.Signature):
    """Extract every check-worthy factual claim from the paragraph as a list of atomic claims.
    Atomic: one fact per claim; a sentence with two facts gives two claims.
    Decontextualised: each claim must be understandable alone; replace pronouns and vague references
    ("it", "the study", "该研究") with the explicit subject, and keep the time, place and any qualifier
    ("under controlled conditions", "in adults over 65") that the paragraph states.
    Skip opinions, greetings and instructions. Write each claim in the paragraph's language."""

    paragraph: str = dspy.InputField()
    context: str = dspy.InputField(desc="summary of earlier paragraphs (may be empty); use it to resolve references")
    claims: list[str] = dspy.OutputField(desc="atomic, self-contained claims; empty list if none")


class ClaimExtractor(dspy.Module):
    """Split a paragraph into atomic, decontextualised claims.

    Args:
        max_claims: keep at most this many claims per paragraph (a guard against runaway lists).
    """

    def __init__(self, max_claims: int = 12) -> None:
        super().__init__()
        self.max_claims = max_claims
        self.extract = dspy.Predict(ExtractClaims)

    def forward(self, paragraph: str, context: str = "") -> dspy.Prediction:
        pred = self.extract(paragraph=neutralise(paragraph), context=neutralise(context))
        claims = [c.strip() for c in (pred.claims or []) if isinstance(c, str) and c.strip()]
        return dspy.Prediction(claims=list(dict.fromkeys(claims))[: self.max_claims])


def claim_flaws(claim: str) -> list[str]:
    """Surface problems of one claim: not decontextualised (opens with a pronoun), not atomic (joined facts, or
    several sentences: a copied passage matches one gold claim and would otherwise count as precise).

    Each flaw says what to do instead: the 1.5B reflector read the bare "not atomic: several sentences" backwards
    and wrote "combine the sentences into a single claim" (docs/optimize.md, "One program per vertical").

    >>> claim_flaws("It was released in 2019.")
    ['not decontextualised: it starts with a pronoun or vague reference; name the subject instead']
    >>> claim_flaws("Acme X1 was released in 2019.")
    []
    >>> claim_flaws("Sales rose 5% in 2023. That is a record.")
    ['not atomic: it copies several sentences into one claim; split it, one claim per fact']
    """
    flaws = []
    if _PRONOUN_START.search(claim.strip()):
        flaws.append("not decontextualised: it starts with a pronoun or vague reference; name the subject instead")
    if len(sentence_spans(claim)) > 1:
        flaws.append("not atomic: it copies several sentences into one claim; split it, one claim per fact")
    elif _COMPOUND.search(claim):
        flaws.append("not atomic: it joins several facts; split it, one claim per fact")
    return flaws


def _score(gold: dspy.Example, pred: dspy.Prediction, match: Match | None = None) -> tuple[float, dict]:
    gold_claims = list(gold.claims)
    pred_claims = [c for c in (getattr(pred, "claims", None) or []) if isinstance(c, str)]
    flawed = {c: flaws for c in pred_claims if (flaws := claim_flaws(c))}
    if not gold_claims:
        score = 1.0 if not pred_claims else 0.0
        return score, {"missing": [], "extra": pred_claims, "matched": [], "flawed": flawed, "precision": score,
                       "recall": 1.0, "written": len(pred_claims)}
    matches, miss, extra = match_texts(gold_claims, pred_claims, match, MATCH_THRESHOLD)
    precision = len(matches) / len(pred_claims) if pred_claims else 0.0
    recall = len(matches) / len(gold_claims)
    penalty = 0.1 * len(flawed) / max(1, len(pred_claims))
    return max(0.0, f1(precision, recall) - penalty), {
        "missing": [gold_claims[i] for i in miss],
        "extra": [pred_claims[j] for j in extra],
        "matched": [(gold_claims[i], pred_claims[j]) for i, j, _ in matches],
        "flawed": flawed,
        "precision": precision,
        "recall": recall,
        "written": len(pred_claims),
    }


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None, match: Match | None = None) -> dspy.Prediction:
    """F1 of predicted vs gold claims (similarity matching), minus a small penalty for flawed claims.

    `match(gold, pred) -> [(gold index, pred index, similarity)]` replaces the lexical matching (optimize.py passes
    evaluate.py's claim matcher, `metric.match` in conf/optimize.yaml).
    """
    score, d = _score(gold, pred, match)
    parts = [f"Claim F1 {score:.2f} (precision {d['precision']:.2f}, recall {d['recall']:.2f})."]
    if d["missing"] and d["written"] < len(gold.claims):
        parts.append(f"Too few claims: {d['written']} written where the paragraph states {len(gold.claims)} facts; "
                     "write one claim for each fact, and never merge two facts into one claim.")
    if d["missing"]:
        parts.append("Missing gold claims: " + " | ".join(d["missing"]))
    if d["extra"]:
        parts.append("Extra claims not in gold (opinions, or facts the paragraph does not state): "
                     + " | ".join(d["extra"]))
    for claim, flaws in d["flawed"].items():
        parts.append(f"Claim {claim!r}: {'; '.join(flaws)}.")
    return dspy.Prediction(score=score, feedback=" ".join(parts))


def extraction_input(worthy_sentences: Iterable[str]) -> str:
    """The `paragraph` the stage reads: a paragraph's check-worthy sentences, in order, joined as the text would be
    (a space after a Latin sentence, none after a Chinese one; the pipeline runs check-worthiness first and extracts
    from what it kept).

    >>> extraction_input(["A rose 5%.", "B fell."]), extraction_input(["营收增长5%。", "利润下降。"])
    ('A rose 5%. B fell.', '营收增长5%。利润下降。')
    """
    return join_sentences(list(worthy_sentences))


def summarise_context(paragraphs: list[str], max_chars: int = CONTEXT_CHARS) -> str:
    """The `context` the stage reads: the first sentence of each earlier paragraph, the newest kept when too long.

    >>> summarise_context(["Acme makes phones. It is big.", "The X1 came out in 2019. More."], 200)
    'Acme makes phones. The X1 came out in 2019.'
    >>> summarise_context(["A long first sentence here."], 10)
    'ence here.'
    """
    if max_chars <= 0:
        return ""
    firsts = []
    for text in paragraphs:
        spans = sentence_spans(text)
        if spans:
            firsts.append(text[spans[0][0]:spans[0][1]].strip())
    summary = join_sentences(firsts)
    return summary[-max_chars:].lstrip() if len(summary) > max_chars else summary


def _sentences_by_paragraph(case: dict, spans: list[list[int]]) -> list[list[dict]]:
    """The gold `sentences` of each paragraph span, in text order (each found after the previous one)."""
    out: list[list[dict]] = [[] for _ in spans]
    cursor = 0
    for sentence in case.get("sentences") or []:
        at = case["text"].find(sentence["text"], cursor)
        if at < 0:
            at = case["text"].find(sentence["text"])
        else:
            cursor = at + len(sentence["text"])
        index = containing(spans, at) if at >= 0 else None
        if index is not None and spans[index][0] <= at < spans[index][1]:
            out[index].append(sentence)
    return out


def to_examples(case: dict) -> list[dspy.Example]:
    """One example per gold paragraph (or the whole text) with its check-worthy gold claims, its inputs as the
    pipeline builds them: the paragraph's gold check-worthy sentences (`extraction_input`) and the summary of the
    earlier paragraphs (`summarise_context`). A paragraph with no check-worthy sentence and no claim gives no example
    (the pipeline does not call the stage there); without gold sentences the whole paragraph is the input.

    >>> case = {"case_id": "x", "lang": "en", "text": "Acme grew 5% in 2023. Great!\\n\\nIt hired 40 people.",
    ...         "paragraphs": [[0, 28], [30, 49]],
    ...         "sentences": [{"text": "Acme grew 5% in 2023.", "checkworthy": True},
    ...                       {"text": "Great!", "checkworthy": False},
    ...                       {"text": "It hired 40 people.", "checkworthy": True}],
    ...         "claims": [{"text": "Acme grew 5% in 2023.", "paragraph": 0},
    ...                    {"text": "Acme hired 40 people.", "paragraph": 1}]}
    >>> [(e.paragraph, e.context, e.claims) for e in to_examples(case)]
    [('Acme grew 5% in 2023.', '', ['Acme grew 5% in 2023.']), ('It hired 40 people.', 'Acme grew 5% in 2023.', \
['Acme hired 40 people.'])]
    """
    if "claims" not in case:
        return []
    claims = [c for c in case["claims"] if c.get("checkworthy", True)]
    text = case["text"]
    spans = case.get("paragraphs") or [[0, len(text)]]
    paragraphs = [text[start:end] for start, end in spans]
    gold = _sentences_by_paragraph(case, spans)
    examples = []
    for index, paragraph in enumerate(paragraphs):
        own = [c["text"] for c in claims if c.get("paragraph", 0) == index] if len(spans) > 1 else [
            c["text"] for c in claims]
        worthy = extraction_input(s["text"] for s in gold[index] if s["checkworthy"])
        if not worthy and not own and gold[index]:
            continue  # the pipeline extracts nothing from a paragraph without a check-worthy sentence
        examples.append(
            dspy.Example(paragraph=worthy or paragraph, context=summarise_context(paragraphs[:index]), claims=own,
                         case_id=case["case_id"], lang=case["lang"]).with_inputs("paragraph", "context")
        )
    return examples
