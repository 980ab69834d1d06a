"""Stage attribution of a wrong final label, two ways.

first failure: walk the stages in pipeline order and blame the first whose output for the claim deviates from gold
beyond its threshold (`attribution.thresholds` in conf/evaluate.yaml); `rules` when none does.

counterfactual: rerun the pipeline with ONE stage's output replaced by gold (the pipeline's `fixed=` hooks; the
stages upstream keep their predicted output, the ones downstream rerun) and record which substitutions fix the label.
A later stage's gold can hide an earlier stage's error (gold evidence hides bad queries), never the reverse, so the
blame goes to the earliest fixing stage when its substitution also changed every later fixer's output; when two
fixers act independently (gold vertical and gold judgments each fix it) the blame is `several`; `none` when no single
substitution fixes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from factlab.cards.model import excerpt
from factlab.evals.alignment import ItemState, RunView, is_placeholder
from factlab.evals.gold import (
    chunk_relations,
    claims_by_paragraph,
    gold_evidence,
    gold_judgments,
    gold_paragraphs,
    gold_sentence_flag,
    gold_sentence_rows,
    gold_spans,
    snippet_agrees,
    span_overlap,
)
from factlab.pipeline.trace import CLAIM_STAGES, DOC_STAGES, PIPELINE_STAGES, ClaimTrace

FIRST_FAILURE_STAGES: tuple[str, ...] = PIPELINE_STAGES
SUBSTITUTABLE: tuple[str, ...] = (*DOC_STAGES, *CLAIM_STAGES)
NONE, SEVERAL = "none", "several"
COUNTERFACTUAL_OUTCOMES: tuple[str, ...] = (*SUBSTITUTABLE, NONE, SEVERAL)
NOT_APPLICABLE = "n/a"  # no gold for this stage, or the item never reached it
NO_OP = "no-op"  # the gold output equals the predicted one: substituting it changes nothing


@dataclass
class Check:
    """One stage's verdict on one item: does its output deviate from gold, and what shows it."""

    stage: str
    deviates: bool
    evidence: str


@dataclass
class Blame:
    """The blamed stage of one bad item under one method, with the evidence for the blame."""

    method: str
    stage: str
    evidence: str
    details: dict = field(default_factory=dict)


# --- first failure ------------------------------------------------------------------------------------------------


def gold_chunk_ids(claim: Mapping) -> list[str]:
    """The distinct gold evidence chunk ids of a claim, in order.

    >>> gold_chunk_ids({"evidence": [{"chunk_id": "a"}, {"chunk_id": "b"}, {"chunk_id": "a"}]})
    ['a', 'b']
    """
    return list(dict.fromkeys(item["chunk_id"] for item in claim.get("evidence", [])))


def recall(wanted: Sequence[str], found: Sequence[str]) -> float | None:
    """Share of `wanted` ids among `found` (None when nothing is wanted).

    >>> recall(["a", "b"], ["b", "c"]), recall([], ["a"])
    (0.5, None)
    """
    return sum(1 for w in wanted if w in set(found)) / len(wanted) if wanted else None


def first_failure_checks(case: dict, item: ItemState, thresholds: Mapping[str, float],
                         search_gold_queries: Callable[[ItemState], list[str] | None]) -> list[Check]:
    """Every stage's check for one item, in pipeline order, up to and including the first deviation.

    Args:
        case: the gold case.
        item: the item as the evaluated run handled it.
        thresholds: `attribution.thresholds` (paragraphs, query_rewrite, retrieval, judge).
        search_gold_queries: item -> chunk ids retrieved with the claim's gold queries (None without gold queries).
    """
    checks: list[Check] = []
    claim, final = item.claim, item.final
    error = final.error if final is not None else None

    def done(check: Check) -> bool:
        checks.append(check)
        return check.deviates

    # paragraphs
    gold_index = claim["paragraph"] if "paragraph" in claim else None
    spans = gold_spans(case)
    if gold_index is not None and item.paragraph_span is not None and 0 <= gold_index < len(spans):
        overlap = span_overlap(spans[gold_index], item.paragraph_span)
        if done(Check("paragraphs", overlap < thresholds["paragraphs"],
                      f"claim's gold paragraph {list(spans[gold_index])} vs predicted {list(item.paragraph_span)}: "
                      f"overlap {overlap:.2f} (threshold {thresholds['paragraphs']})")):
            return checks
    # checkworthy
    row = item.sentence_row
    if row is not None:
        gold = gold_sentence_flag(case, row["text"])
        expected = True if gold is None else gold[0]
        if done(Check("checkworthy", expected and not row["checkworthy"],
                      f"sentence {excerpt(row['text'])!r} judged check-worthy={row['checkworthy']} "
                      f"(reason: {excerpt(row.get('reason', ''))!r}), gold {expected}")):
            return checks
    # extract_claims: a draft error that the review repaired is no failure
    best = f"best draft {excerpt(item.best_draft[0])!r} at {item.best_draft[1]:.2f}" if item.best_draft else "no drafts"
    if done(Check("extract_claims", item.draft_match is None and final is None,
                  f"gold claim {excerpt(claim['text'])!r}: {best}" if item.draft_match is None else
                  f"draft {excerpt(item.draft_match[0])!r} matches at {item.draft_match[1]:.2f}")):
        return checks
    # review_claims
    if item.draft_match is not None and final is None:
        best_f = (f"best reviewed claim {excerpt(item.best_final[0])!r} at {item.best_final[1]:.2f}"
                  if item.best_final else "no reviewed claims")
        done(Check("review_claims", True, f"draft {excerpt(item.draft_match[0])!r} matched the gold claim at "
                                          f"{item.draft_match[1]:.2f} but the review dropped or changed it ({best_f})"))
        return checks
    if final is None:  # unreachable: a missed claim fails extract or review above
        return checks
    if is_placeholder(final):
        done(Check("extract_claims", True, f"claim extraction failed: {error}"))
        return checks
    # claim-level stages: an error at a stage is that stage's failure
    for stage in ("vertical", "query_rewrite", "retrieval", "judge", "rules"):
        if error is not None and error.stage == stage:
            done(Check(stage, True, f"{stage} failed: {error}"))
            return checks
        check = _claim_check(stage, item, thresholds, search_gold_queries)
        if check is not None and done(check):
            return checks
    return checks


def _claim_check(stage: str, item: ItemState, thresholds: Mapping[str, float],
                 search_gold_queries: Callable[[ItemState], list[str] | None]) -> Check | None:
    claim, final = item.claim, item.final
    if stage == "vertical":
        if not claim.get("vertical"):
            return None
        return Check("vertical", final.vertical != claim["vertical"],
                     f"vertical {final.vertical!r}, gold {claim['vertical']!r}")
    if stage in ("query_rewrite", "retrieval"):
        wanted = gold_chunk_ids(claim)
        if not wanted:
            return None
        found = [e.chunk_id for e in final.evidence]
        got = recall(wanted, found)
        with_gold = search_gold_queries(item)
        gold_recall = recall(wanted, with_gold) if with_gold is not None else None
        line = (f"queries {[excerpt(q, 60) for q in final.queries]} retrieve {round(got * len(wanted))}/{len(wanted)} "
                f"gold chunks (recall {got:.2f})"
                + (f"; the gold queries retrieve {round(gold_recall * len(wanted))}/{len(wanted)}"
                   if gold_recall is not None else "; no gold queries"))
        if stage == "query_rewrite":
            deviates = got < thresholds["query_rewrite"] and gold_recall is not None and gold_recall > got
            return Check(stage, deviates, line + f" (threshold {thresholds['query_rewrite']})")
        missing = [w for w in wanted if w not in set(found)]
        return Check(stage, got < thresholds["retrieval"],
                     line + f"; missing {missing} (threshold {thresholds['retrieval']})")
    if stage == "judge":
        pairs = list(zip(final.evidence, final.judgments, strict=False))
        if not pairs:
            return None
        gold = chunk_relations(claim)
        wrong = [(e.chunk_id, j.relation, gold.get(e.chunk_id) or ["irrelevant"]) for e, j in pairs
                 if not snippet_agrees(j.relation, gold.get(e.chunk_id, []))]
        agreement = 1 - len(wrong) / len(pairs)
        detail = "; ".join(f"{cid}: judged {rel}, gold {'/'.join(g)}" for cid, rel, g in wrong) or "all agree"
        return Check("judge", agreement < thresholds["judge"],
                     f"snippet agreement {agreement:.2f} (threshold {thresholds['judge']}): {detail}")
    if stage == "rules":
        card = final.card
        return Check("rules", item.bad, f"every stage within its threshold; the rules gave {item.label!r} "
                                        f"(relation {card.relation if card else None}) where gold is "
                                        f"{item.gold_label!r}: " + "; ".join(card.hints[:2] if card else []))
    raise ValueError(f"unknown claim stage {stage!r}")


def first_failure(case: dict, item: ItemState, thresholds: Mapping[str, float],
                  search_gold_queries: Callable[[ItemState], list[str] | None]) -> Blame:
    """The first-failure blame of a bad item."""
    checks = first_failure_checks(case, item, thresholds, search_gold_queries)
    failed = next((c for c in checks if c.deviates), None)
    if failed is None:  # defensive: a bad item always fails some check (rules at the latest)
        return Blame("first_failure", "rules", "no stage deviates")
    return Blame("first_failure", failed.stage, failed.evidence, {"checks": [c.__dict__ for c in checks]})


# --- counterfactual -----------------------------------------------------------------------------------------------


def doc_substitution(stage: str, case: dict, base: RunView, paragraphs: set[int]) -> dict[str, Any] | None:
    """The `fixed=` of a document-level substitution, local to `paragraphs` (the predicted paragraphs holding the
    bad items; the others keep their predicted output), or None when gold equals the prediction (a no-op)."""
    trace = base.trace
    pred_paragraphs = [dict(p) for p in trace.paragraphs]
    if stage == "paragraphs":
        gold = gold_paragraphs(case)
        same = [(p["start"], p["end"]) for p in gold] == [(p["start"], p["end"]) for p in pred_paragraphs]
        return None if same else {"paragraphs": gold}
    rows = [gold_sentence_rows(case, r) if i in paragraphs else r for i, r in enumerate(trace.sentences)]
    if stage == "checkworthy":
        same = all(a["checkworthy"] == b["checkworthy"] for x, y in zip(rows, trace.sentences, strict=True)
                   for a, b in zip(x, y, strict=True))
        return None if same else {"paragraphs": pred_paragraphs, "checkworthy": rows}
    by_paragraph = [[c["text"] for c in claims] for claims in claims_by_paragraph(case, pred_paragraphs)]
    if stage == "extract_claims":
        drafts = [by_paragraph[i] if i in paragraphs else d for i, d in enumerate(base.drafts)]
        return None if drafts == base.drafts else {"paragraphs": pred_paragraphs, "checkworthy": trace.sentences,
                                                   "extract_claims": drafts}
    if stage == "review_claims":
        finals = [[t.text for t in unit.real_claims()] for unit in trace.units]
        reviewed = [by_paragraph[i] if i in paragraphs else f for i, f in enumerate(finals)]
        return None if reviewed == finals else {"paragraphs": pred_paragraphs, "checkworthy": trace.sentences,
                                                "extract_claims": base.drafts, "review_claims": reviewed}
    raise ValueError(f"{stage!r} is not a document-level stage; expected one of {', '.join(DOC_STAGES)}")


def claim_substitution(stage: str, item: ItemState, sources: Mapping[str, object]) -> dict[str, Any] | str:
    """The `fixed=` of a claim-level substitution for one item (its upstream claim stages pinned to their predicted
    output), or NOT_APPLICABLE / NO_OP."""
    final, claim = item.final, item.claim
    if final is None or is_placeholder(final):
        return NOT_APPLICABLE
    failed_at = final.error.stage if final.error is not None else None
    reached = list(CLAIM_STAGES)[: CLAIM_STAGES.index(failed_at)] if failed_at in CLAIM_STAGES else list(CLAIM_STAGES)
    predicted = {"vertical": final.vertical, "query_rewrite": list(final.queries), "retrieval": list(final.evidence),
                 "judge": list(final.judgments)}
    upstream = {s: predicted[s] for s in CLAIM_STAGES[: CLAIM_STAGES.index(stage)] if s in reached}
    if stage == "vertical":
        if not claim.get("vertical"):
            return NOT_APPLICABLE
        gold, same = claim["vertical"], "vertical" in reached and final.vertical == claim["vertical"]
    elif stage == "query_rewrite":
        if not claim.get("queries"):
            return NOT_APPLICABLE
        gold, same = list(claim["queries"]), "query_rewrite" in reached and list(final.queries) == claim["queries"]
    elif stage == "retrieval":
        if "evidence" not in claim:
            return NOT_APPLICABLE
        gold = gold_evidence(claim, sources)
        same = "retrieval" in reached and [e.chunk_id for e in final.evidence] == [e.chunk_id for e in gold]
    elif stage == "judge":
        if "evidence" not in claim or "retrieval" not in upstream:
            return NOT_APPLICABLE
        gold = gold_judgments(claim, upstream["retrieval"])
        same = "judge" in reached and [(j.relation, j.confidence) for j in final.judgments] == [
            (j.relation, j.confidence) for j in gold]
    else:
        raise ValueError(f"{stage!r} is not a claim-level stage; expected one of {', '.join(CLAIM_STAGES)}")
    return NO_OP if same and failed_at is None else {**upstream, stage: gold}


def counterfactual_blame(item: ItemState, outcomes: Mapping[str, ItemState | str]) -> Blame:
    """Blame from the substitution outcomes of one bad item (stage -> the item after it, or n/a / no-op)."""
    labels = {s: (o.label if isinstance(o, ItemState) else o) for s, o in outcomes.items()}
    fixers = [s for s in SUBSTITUTABLE if s in outcomes and isinstance(outcomes[s], ItemState)
              and outcomes[s].label == item.gold_label]
    details = {"fixers": fixers, "labels": labels}
    if not fixers:
        tried = ", ".join(f"{s}->{lab}" for s, lab in labels.items())
        return Blame("counterfactual", NONE, f"no single gold substitution fixes {item.label!r} (gold "
                                             f"{item.gold_label!r}); {tried}", details)
    first = fixers[0]
    base, after = item.outputs(), outcomes[first].outputs()
    independent = [s for s in fixers[1:] if after[s] == base[s]]
    if independent:
        details["independent"] = independent
        return Blame("counterfactual", SEVERAL, f"gold {first} fixes it, and so does gold {', '.join(independent)} "
                                                f"whose output gold {first} leaves unchanged (independent causes)",
                     details)
    also = f"; also fixed by gold {', '.join(fixers[1:])}, downstream of it" if fixers[1:] else ""
    return Blame("counterfactual", first, f"gold {first} turns {item.label!r} into {item.gold_label!r}{also}",
                 details)


def reprocess(pipeline, item: ItemState, fixed: Mapping[str, Any]) -> ItemState:
    """The item after rerunning its claim's claim-level stages with `fixed`."""
    final = item.final
    fresh = ClaimTrace(final.claim_id, final.text, final.sentence)
    return item.with_final(pipeline.process_claim(fresh, fixed=fixed))
