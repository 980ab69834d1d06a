"""What a person's decisions teach: the product metrics (adoption, risk coverage), training rows for the stage a
decision concerns (leak-checked like evaluate.py's reflow), and the business thresholds refitted on the decisions
with a held-back part to report before / after on.

The reviewer's label is the truth of a decided card: `accept` confirms the card's label, `reject` / `revise` with a
`revised_label` replaces it; a rejection without a label says "not this" and counts for adoption only.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from factlab.cards.model import ClaimCard, ParagraphCard
from factlab.review.runs import ReviewTarget
from factlab.review.store import Decision
from factlab.schema import Evidence, Judgment

RISKY_LABELS = ("wrong", "disputed")  # what a reviewer must not miss
FLAGGED_RISKS = ("red", "yellow")  # what the report shows as needing attention
LABEL_RELATION = {"correct": "support", "wrong": "contradict", "disputed": "partial_support",
                  "unverifiable": "insufficient"}  # the claim-level relation a reviewer's label stands for


def truth(card: ClaimCard, decision: Decision) -> str | None:
    """The reviewer's label for the card, or None when the decision names none.

    >>> card = ClaimCard(claim_id="c1", text="x", label="correct", relation="support")
    >>> truth(card, Decision("r", "p1", "c1", "v", "accept")), truth(card, Decision("r", "p1", "c1", "v", "reject",
    ...       reason="no", revised_label="wrong"))
    ('correct', 'wrong')
    """
    if decision.decision == "accept":
        return card.label
    return decision.revised_label


def decided(target: ReviewTarget, decisions: Mapping[tuple[str, str], Decision]
            ) -> list[tuple[ParagraphCard, ClaimCard, Decision]]:
    """(paragraph, card, current decision) for every decided card of the run."""
    cards = target.cards()
    return [(*cards[key], decision) for key, decision in decisions.items() if key in cards]


def product_metrics(rows: Sequence[tuple[ParagraphCard, ClaimCard, Decision]]) -> dict[str, Any]:
    """Adoption (accepted / decided) and risk coverage (of the cards the reviewer says are wrong or disputed, the
    share the report flagged red or yellow), overall and per business.

    >>> p = ParagraphCard(paragraph_id="p1", text="t", start=0, end=1, risk_level="red")
    >>> red = ClaimCard(claim_id="c1", text="a", label="wrong", relation="contradict", risk_level="red")
    >>> ok = ClaimCard(claim_id="c2", text="b", label="correct", relation="support")
    >>> m = product_metrics([(p, red, Decision("r", "p1", "c1", "v", "accept", business="default")),
    ...                      (p, ok, Decision("r", "p1", "c2", "v", "reject", reason="stale", revised_label="wrong",
    ...                                       business="default"))])
    >>> m["adoption"], m["risk_coverage"], m["risky"], m["by_business"]["default"]["decided"]
    (0.5, 0.5, 2, 2)
    """
    def one(group: Sequence[tuple[ParagraphCard, ClaimCard, Decision]]) -> dict[str, Any]:
        accepted = sum(d.decision == "accept" for _, _, d in group)
        risky = [(c, d) for _, c, d in group if truth(c, d) in RISKY_LABELS]
        covered = sum(c.risk_level in FLAGGED_RISKS for c, _ in risky)
        return {"decided": len(group), "accepted": accepted, "rejected": sum(d.decision == "reject" for *_, d in group),
                "revised": sum(d.decision == "revise" for *_, d in group),
                "adoption": accepted / len(group) if group else None, "risky": len(risky), "covered": covered,
                "risk_coverage": covered / len(risky) if risky else None}

    out = one(rows)
    by_business: dict[str, list] = {}
    for row in rows:
        by_business.setdefault(row[2].business or "unknown", []).append(row)
    out["by_business"] = {name: one(group) for name, group in sorted(by_business.items())}
    return out


def relabel(card: ClaimCard, rules) -> str:
    """The label `rules` (factlab.rules.business.BusinessRules) give the card's judged evidence."""
    judged = [(Evidence(e.source_id, e.chunk_id, e.snippet, tier=e.tier, page=e.page, domain=e.domain, title=e.title),
               Judgment(e.relation, e.confidence)) for e in card.evidence]
    return rules.decide(card.vertical, judged, claim=card.text).label


def split_held_back(rows: Sequence, share: float, seed: int) -> tuple[list, list]:
    """(fit, held back): a seeded `share` of the rows held back, at least one row each when there are two.

    >>> fit, back = split_held_back(list(range(10)), 0.3, 0)
    >>> len(fit), len(back), sorted(fit + back) == list(range(10))
    (7, 3, True)
    """
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_back = min(len(rows) - 1, max(1, round(share * len(rows)))) if len(rows) > 1 else 0
    back = set(order[:n_back])
    return [r for i, r in enumerate(rows) if i not in back], [r for i, r in enumerate(rows) if i in back]


def fit_thresholds(rows: Sequence[tuple[ParagraphCard, ClaimCard, Decision]], rules, grids: Mapping[str, Sequence],
                   held_back: float, seed: int) -> dict[str, Any]:
    """Refit business thresholds on the decisions: each value of `grids` (e.g. {"min_confidence": [...]}) tried one
    knob at a time on the fit part, kept when it agrees with the reviewers' labels more often than the current
    value; agreement before / after reported on the held-back part, which the search never saw.

    Returns:
        {"fit": n, "held_back": n, "before": {...}, "after": {...}, "chosen": {knob: value}, "agreement_fit": ...}
    """
    labelled = [(c, truth(c, d)) for _, c, d in rows if truth(c, d) is not None and c.evidence]
    fit, back = split_held_back(labelled, held_back, seed)

    def agreement(candidate, part) -> float | None:
        return sum(relabel(c, candidate) == t for c, t in part) / len(part) if part else None

    chosen, best = {}, rules
    for knob, values in grids.items():
        score = agreement(best, fit)
        for value in values:
            trial = replace(best, **{knob: value})
            trial_score = agreement(trial, fit)
            if trial_score is not None and score is not None and trial_score > score:
                best, score, chosen[knob] = trial, trial_score, value
    return {"fit": len(fit), "held_back": len(back), "chosen": chosen,
            "current": {knob: getattr(rules, knob) for knob in grids},
            "agreement_fit_before": agreement(rules, fit), "agreement_fit_after": agreement(best, fit),
            "agreement_held_back_before": agreement(rules, back), "agreement_held_back_after": agreement(best, back)}


def training_rows(rows: Iterable[tuple[ParagraphCard, ClaimCard, Decision]], lang: str) -> dict[str, list[dict]]:
    """Case-schema rows per stage from the decisions (no ids or provenance yet):

    - a decision with a `revised_label` on a card with evidence -> a judge row: the claim, the snippets its label
      rested on (`depends_on`, else the decisive ones) with the relation that label stands for;
    - a `revised_claim` -> an extract_claims row (the paragraph and the claim as it should read) and a review_claims
      row (the card's draft fixed into it).
    """
    out: dict[str, list[dict]] = {}
    for paragraph, card, decision in rows:
        base = {"lang": lang, "sources": []}
        label = decision.revised_label
        if label and card.evidence:
            rested = [e for e in card.evidence if e.source_id in card.depends_on] or [
                e for e in card.evidence if e.relation in ("support", "partial_support", "contradict")] or card.evidence
            relation = LABEL_RELATION[label]
            # each snippet becomes a one-chunk source of its own (the row carries snippets, not whole documents)
            ids = [f"{e.source_id}-p{e.page}-{i + 1}" for i, e in enumerate(rested)]
            evidence = [{"source_id": sid, "chunk_id": f"{sid}#p1-c1", "text": e.snippet, "relation": relation}
                        for sid, e in zip(ids, rested, strict=True)]
            sources = [{"source_id": sid, "title": e.title or e.source_id, "lang": lang, "text": e.snippet}
                       for sid, e in zip(ids, rested, strict=True)]
            out.setdefault("judge", []).append({**base, "text": card.text, "sources": sources, "claims": [
                {"claim_id": "c1", "text": decision.revised_claim or card.text, "evidence": evidence,
                 "relation": relation, "label": label}], "evidence_chunks": [e.chunk_id for e in rested]})
        if decision.revised_claim and decision.revised_claim.strip() != card.text.strip():
            fixed = decision.revised_claim.strip()
            out.setdefault("extract_claims", []).append(
                {**base, "text": paragraph.text, "claims": [{"claim_id": "c1", "text": fixed}]})
            out.setdefault("review_claims", []).append(
                {**base, "text": paragraph.text, "claims": [{"claim_id": "c1", "text": fixed}],
                 "review": [{"draft": card.text, "action": "fix", "fixed": fixed, "flaw": "none"}]})
    return out


def row_id(stage: str, run_key: str, decision: Decision) -> str:
    """A stable case id for a row made from one decision.

    >>> row_id("judge", "dir:/x", Decision("dir:/x", "p1", "c1", "v", "accept", id=7))
    'review-judge-68308aab-p1-c1-7'
    """
    digest = hashlib.sha1(run_key.encode()).hexdigest()[:8]
    return f"review-{stage}-{digest}-{decision.paragraph_id}-{decision.claim_id}-{decision.id}"
