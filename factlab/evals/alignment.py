"""Line a pipeline run up with a case's gold, one `ItemState` per gold claim: where the claim's sentence landed, the
drafts and reviewed claims of its paragraph, the predicted claim matched to it and that claim's label.

`ItemState.outputs()` is every stage's output for the item as one comparable value per stage: what attribution
compares between the original run and a run with one stage substituted by gold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from factlab.evals.gold import claim_offset, gold_claims, gold_spans
from factlab.matching.claims import ClaimMatcher
from factlab.matching.segment import containing
from factlab.pipeline.trace import ClaimTrace, DocumentTrace

MISSED = "missed"  # predicted label of a gold claim no predicted claim matches
ERROR = "error"  # predicted label of a matched claim whose processing failed


def is_placeholder(trace: ClaimTrace) -> bool:
    """The error card standing for a paragraph whose claims could not be extracted."""
    return trace.placeholder


@dataclass
class ItemState:
    """One gold claim as one run of the pipeline handled it."""

    claim: dict
    paragraph: int | None  # predicted paragraph holding the claim's source sentence
    paragraph_span: tuple[int, int] | None
    sentence_row: dict | None  # the predicted sentence row holding it
    drafts: list[str]  # drafts of that paragraph
    finals: list[str]  # reviewed claims of that paragraph
    draft_match: tuple[str, float] | None  # the draft matched to the gold claim (doc-wide one-to-one)
    best_draft: tuple[str, float] | None
    final: ClaimTrace | None  # the predicted claim matched to it
    final_sim: float = 0.0
    best_final: tuple[str, float] | None = None
    extras: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.final is None:
            return MISSED
        if self.final.error is not None or self.final.card is None or self.final.card.label is None:
            return ERROR
        return self.final.card.label

    @property
    def gold_label(self) -> str | None:
        return self.claim.get("label")

    @property
    def bad(self) -> bool:
        return self.gold_label is not None and self.label != self.gold_label

    def outputs(self) -> dict[str, Any]:
        """Each stage's output for this item, as a comparable value (None where the item never reached it)."""
        final = self.final
        claim_level = final is not None and not is_placeholder(final)
        return {
            "paragraphs": self.paragraph_span,
            "checkworthy": None if self.sentence_row is None else bool(self.sentence_row["checkworthy"]),
            "extract_claims": tuple(self.drafts),
            "review_claims": tuple(self.finals),
            "vertical": final.vertical if claim_level else None,
            "query_rewrite": tuple(final.queries) if claim_level else None,
            "retrieval": tuple(e.chunk_id for e in final.evidence) if claim_level else None,
            "judge": tuple((j.relation, round(j.confidence, 3)) for j in final.judgments) if claim_level else None,
            "label": self.label,
        }

    def with_final(self, final: ClaimTrace) -> ItemState:
        """The same item with its predicted claim reprocessed (a claim-level substitution)."""
        return ItemState(self.claim, self.paragraph, self.paragraph_span, self.sentence_row, self.drafts, self.finals,
                         self.draft_match, self.best_draft, final, self.final_sim, self.best_final, dict(self.extras))


@dataclass
class RunView:
    """A run of the pipeline on one case, seen from the gold: per gold claim id, its ItemState."""

    trace: DocumentTrace
    drafts: list[list[str]]
    items: dict[str, ItemState]
    fixed: Mapping[str, Any]


def align(case: dict, trace: DocumentTrace, matcher: ClaimMatcher, fixed: Mapping[str, Any] | None = None) -> RunView:
    """Match the run's drafts and reviewed claims (both read from the trace) to the case's gold claims and build each
    claim's ItemState.

    Args:
        case: the gold case.
        trace: the pipeline's trace of the case's text.
        matcher: the semantic claim matcher.
        fixed: the gold substitutions this run was made with (kept for the record).
    """
    drafts = trace.drafts
    golds = gold_claims(case)
    gold_texts = [c["text"] for c in golds]
    spans = [(p["start"], p["end"]) for p in trace.paragraphs]
    flat_drafts = [(i, text) for i, texts in enumerate(drafts) for text in texts]
    flat_finals = [(i, t) for i, traces in enumerate(trace.claims) for t in traces]
    draft_pairs = {gi: (flat_drafts[pj][1], sim)
                   for gi, pj, sim in matcher.match(gold_texts, [d for _, d in flat_drafts])}
    final_pairs = {gi: (flat_finals[pj][1], sim)
                   for gi, pj, sim in matcher.match(gold_texts, [t.text for _, t in flat_finals])}
    items = {}
    for gi, claim in enumerate(golds):
        offset = claim_offset(case, claim)
        index = containing(spans, offset)
        row = None
        if index is not None:
            row = next((r for r in trace.sentences[index] if r["start"] <= offset < r["end"]), None)
        own_drafts = drafts[index] if index is not None else []
        own_finals = [t.text for t in trace.units[index].real_claims()] if index is not None else []
        best_d = matcher.best(claim["text"], [d for _, d in flat_drafts])
        best_f = matcher.best(claim["text"], [t.text for _, t in flat_finals])
        final, final_sim = final_pairs.get(gi, (None, 0.0))
        items[claim["claim_id"]] = ItemState(
            claim=claim, paragraph=index, paragraph_span=spans[index] if index is not None else None,
            sentence_row=row, drafts=own_drafts, finals=own_finals, draft_match=draft_pairs.get(gi),
            best_draft=(flat_drafts[best_d[0]][1], best_d[1]) if best_d[0] is not None else None,
            final=final, final_sim=final_sim,
            best_final=(flat_finals[best_f[0]][1].text, best_f[1]) if best_f[0] is not None else None)
    return RunView(trace, drafts, items, dict(fixed or {}))


def gold_paragraph_of(case: dict, claim: dict) -> int:
    """Index of the gold paragraph a gold claim belongs to."""
    if "paragraph" in claim:
        return int(claim["paragraph"])
    return containing(gold_spans(case), claim_offset(case, claim)) or 0
