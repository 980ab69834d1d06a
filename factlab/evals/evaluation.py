"""Evaluate a built pipeline on cases with per-stage gold: run each case, line the run up with the gold, score every
stage with its own scoring core, attribute every wrong final label (both methods), and meter the cost per phase.

`evaluate_cases` takes a built checker (`factlab.checkers.base.Checker`: real stages or test fakes) and returns plain
records; factlab/evals/job.py builds the checker from config and logs the records.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dspy
from tqdm import tqdm

from factlab.checkers.base import Checker
from factlab.evals.alignment import ItemState, RunView, align, gold_paragraph_of, is_placeholder
from factlab.evals.attribution import (
    NO_OP,
    claim_substitution,
    counterfactual_blame,
    doc_substitution,
    first_failure,
    gold_chunk_ids,
    recall,
    reprocess,
)
from factlab.evals.gold import claim_offset, gold_claims, gold_spans
from factlab.matching.claims import ClaimMatcher
from factlab.matching.segment import containing
from factlab.models.errors import classify_exception
from factlab.pipeline.trace import CLAIM_STAGES, DOC_STAGES
from factlab.programs import checkworthy as checkworthy_program
from factlab.programs import judge as judge_program
from factlab.programs import paragraphs as paragraphs_program
from factlab.programs import query_rewrite as query_program
from factlab.programs import vertical as vertical_program

logger = logging.getLogger(__name__)

FLAGGED = ("red", "yellow")  # paragraph risk levels that count as flagged for the reader


@dataclass(frozen=True)
class EvalSettings:
    """What evaluation needs beyond the pipeline (conf/evaluate.yaml: k, attribution, judge_given_gold)."""

    k: int
    thresholds: Mapping[str, float]
    counterfactual_stages: Sequence[str]
    judge_given_gold: bool
    progress: bool = False


@dataclass
class Evaluation:
    """Everything an evaluation produced, as JSON-able records."""

    cases: list[dict] = field(default_factory=list)  # per case: stage scores and per-item records
    attribution: list[dict] = field(default_factory=list)  # per bad item: both blames and their evidence
    costs: dict[str, dict] = field(default_factory=dict)  # phase -> stage -> cost


def _costs_delta(after: dict, before: dict) -> dict:
    return {stage: {key: round(value - before.get(stage, {}).get(key, 0), 3) for key, value in costs.items()}
            for stage, costs in after.items()}


def evaluate_cases(pipeline: Checker, cases: Sequence[dict], matcher: ClaimMatcher, settings: EvalSettings,
                   sources: Mapping[str, object]) -> Evaluation:
    """Run, score and attribute every case.

    Args:
        pipeline: the built pipeline (its claim cache must be off: a cached claim carries no evidence).
        cases: the gold cases.
        matcher: the claim matcher (predicted <-> gold claims).
        settings: k, attribution thresholds and stages, whether to judge the gold evidence too.
        sources: source_id -> indexed source (tier / domain of gold evidence substituted for retrieval).

    Returns:
        The Evaluation.
    """
    if pipeline.cache is not None:
        raise ValueError("evaluation needs claim_cache.enabled=false: a claim served from the cache has no evidence "
                         "or judgments to score")
    result = Evaluation()
    start = pipeline.meter.costs()
    views: list[RunView] = []
    for case in tqdm(cases, desc="cases", unit="case", disable=not settings.progress):
        trace = pipeline.run(case["text"], name=case["case_id"])
        views.append(align(case, trace, matcher))
    after_run = pipeline.meter.costs()
    result.costs["pipeline"] = _costs_delta(after_run, start)

    gold_query_hits: dict[tuple[str, str], list[str] | None] = {}

    def search_gold_queries(item: ItemState) -> list[str] | None:
        key = (item.claim["text"], item.final.text if item.final else "")
        if key not in gold_query_hits:
            queries = item.claim.get("queries")
            gold_query_hits[key] = None if not queries else [
                e.chunk_id for e in pipeline.retriever.search(list(queries), k=settings.k, claim=key[1] or key[0])]
        return gold_query_hits[key]

    desc = "scoring + judge on gold evidence" if settings.judge_given_gold else "scoring"
    for case, view in tqdm(list(zip(cases, views, strict=True)), desc=desc, unit="case",
                           disable=not settings.progress):
        record = score_case(case, view, matcher, settings, pipeline, search_gold_queries)
        if settings.judge_given_gold:
            judge_gold_evidence(pipeline, case, record)
        result.cases.append(record)
    after_judge = pipeline.meter.costs()
    result.costs["judge_given_gold"] = _costs_delta(after_judge, after_run)

    for case, view in tqdm(list(zip(cases, views, strict=True)), desc="attribution", unit="case",
                           disable=not settings.progress):
        result.attribution.extend(attribute_case(pipeline, case, view, matcher, settings, sources,
                                                 search_gold_queries))
    result.costs["attribution"] = _costs_delta(pipeline.meter.costs(), after_judge)
    return result


# --- scoring ------------------------------------------------------------------------------------------------------


def score_case(case: dict, view: RunView, matcher: ClaimMatcher, settings: EvalSettings, pipeline: Checker,
               search_gold_queries) -> dict:
    """One case's per-stage scores (each from its stage's scoring core) and its per-item records."""
    trace = view.trace
    record: dict[str, Any] = {"case_id": case["case_id"], "lang": case["lang"],
                              "error_type": case.get("error_type")}
    if case.get("paragraphs"):
        score, detail = paragraphs_program._score(
            dspy.Example(document=case["text"], paragraphs=[list(p) for p in case["paragraphs"]]),
            dspy.Prediction(paragraphs=trace.paragraphs))
        record["paragraphs"] = {"f1": score, "precision": detail["precision"], "recall": detail["recall"]}
    sentences = []
    rows = [r for rs in trace.sentences for r in rs]
    for gold in case.get("sentences", []):
        index, sim = matcher.best(gold["text"], [r["text"] for r in rows]) if rows else (None, 0.0)
        got = bool(rows[index]["checkworthy"]) if index is not None and sim >= 0.5 else False
        score, _ = checkworthy_program._score(dspy.Example(checkworthy=gold["checkworthy"]),
                                              dspy.Prediction(checkworthy=got))
        sentences.append({"gold": bool(gold["checkworthy"]), "pred": got, "correct": score})
    record["sentences"] = sentences
    golds = gold_claims(case)
    gold_texts = [c["text"] for c in golds]
    drafts = [d for ds in view.drafts for d in ds]
    finals = [t.text for unit in trace.units for t in unit.real_claims()]
    record["extract_claims"] = {"gold": len(golds), "pred": len(drafts),
                                "matched": len(matcher.match(gold_texts, drafts))}
    record["review_claims"] = {"gold": len(golds), "pred": len(finals),
                               "matched": len(matcher.match(gold_texts, finals))}
    record["items"] = [score_item(item, settings, search_gold_queries) for item in view.items.values()]
    kinds = [t.error.kind for ts in trace.claims for t in ts if t.error is not None]
    record["errors"] = {kind: kinds.count(kind) for kind in sorted(set(kinds))}  # timeouts / dead server show here
    record["gold_paragraphs"] = paragraph_flags(case, trace)
    return record


def score_item(item: ItemState, settings: EvalSettings, search_gold_queries) -> dict:
    """One gold claim's per-stage record."""
    claim, final = item.claim, item.final
    out: dict[str, Any] = {
        "claim_id": claim["claim_id"], "claim": claim["text"], "gold_label": claim.get("label"),
        "gold_relation": claim.get("relation"), "gold_vertical": claim.get("vertical"), "pred_label": item.label,
        "matched": final is not None, "match_sim": item.final_sim, "pred_claim": final.text if final else None,
    }
    if final is None or is_placeholder(final):
        return out
    if claim.get("vertical") and final.vertical is not None:
        score, _ = vertical_program._score(dspy.Example(vertical=claim["vertical"]),
                                           dspy.Prediction(vertical=final.vertical))
        out.update(pred_vertical=final.vertical, vertical_correct=score)
    wanted = gold_chunk_ids(claim)
    reached_retrieval = final.error is None or final.error.stage in ("judge", "rules")
    if wanted and reached_retrieval:
        found = [e.chunk_id for e in final.evidence]
        out["recall"] = recall(wanted, found)
        with_gold = search_gold_queries(item)
        out["recall_gold_queries"] = recall(wanted, with_gold) if with_gold is not None else None
        score, _ = query_program._score(dspy.Example(claim=final.text, evidence=claim["evidence"]),
                                        dspy.Prediction(queries=final.queries),
                                        retrieve=lambda queries: [e.chunk_id for e in final.evidence])
        out["query_score"] = max(0.0, score)
    if claim.get("relation") and (final.error is None or final.error.stage == "rules"):
        relation, _ = judge_program.aggregate(list(final.judgments))
        score, _ = judge_program._score(dspy.Example(relation=claim["relation"]),
                                        dspy.Prediction(relation=relation, judgments=final.judgments))
        out.update(judge_relation=relation, judge_score=score)
    return out


def judge_gold_evidence(pipeline: Checker, case: dict, record: dict) -> None:
    """The judge on the gold claim with its gold evidence (its score given perfect upstream stages)."""
    by_id = {c["claim_id"]: c for c in gold_claims(case)}
    for item in record["items"]:
        claim = by_id[item["claim_id"]]
        if not claim.get("evidence") or not claim.get("relation"):
            continue
        try:
            pred = pipeline.meter.call("judge", pipeline.stages["judge"], claim=claim["text"],
                                       evidence=[e["text"] for e in claim["evidence"]])
            item["judge_given_gold"] = judge_program.aggregate(list(pred.judgments))[0]
        except Exception as exc:  # one failing call is a wrong answer, not a failed evaluation
            error = classify_exception("judge", exc)
            logger.warning("judge on gold evidence failed for %s/%s: %s", case["case_id"], claim["claim_id"], error)
            item["judge_given_gold"] = "error"
            record["errors"][f"judge_given_gold_{error.kind}"] = record["errors"].get(
                f"judge_given_gold_{error.kind}", 0) + 1


def paragraph_flags(case: dict, trace) -> list[dict]:
    """Per gold paragraph: problematic (a gold claim in it is not `correct`) and flagged (a predicted claim located
    in it has red or yellow risk)."""
    spans = gold_spans(case)
    rows = [{"problematic": False, "flagged": False, "has_claims": False} for _ in spans]
    for claim in gold_claims(case):
        index = gold_paragraph_of(case, claim)
        if 0 <= index < len(rows):
            rows[index]["has_claims"] = True
            rows[index]["problematic"] |= claim.get("label", "correct") != "correct"
    for traces in trace.claims:
        for t in traces:
            if t.card is None or t.card.risk_level not in FLAGGED:
                continue
            offset = claim_offset(case, {"sentence": t.sentence, "text": t.text})
            index = containing(spans, offset)
            if index is not None:
                rows[index]["flagged"] = True
    return rows


# --- attribution --------------------------------------------------------------------------------------------------


def attribute_case(pipeline: Checker, case: dict, view: RunView, matcher: ClaimMatcher, settings: EvalSettings,
                   sources: Mapping[str, object], search_gold_queries) -> list[dict]:
    """Both blames for every bad item of one case, as table rows."""
    bad = [item for item in view.items.values() if item.bad]
    if not bad:
        return []
    stages = list(settings.counterfactual_stages)
    paragraphs = {item.paragraph for item in bad if item.paragraph is not None}
    doc_runs: dict[str, RunView | None] = {}
    for stage in (s for s in stages if s in DOC_STAGES):
        fixed = doc_substitution(stage, case, view, paragraphs)
        if fixed is None:
            doc_runs[stage] = None
            continue
        trace = pipeline.run(case["text"], name=case["case_id"], fixed=fixed)
        doc_runs[stage] = align(case, trace, matcher, fixed)
    rows = []
    for item in bad:
        outcomes: dict[str, ItemState | str] = {}
        for stage in stages:
            if stage in DOC_STAGES:
                run = doc_runs[stage]
                outcomes[stage] = NO_OP if run is None else run.items[item.claim["claim_id"]]
            elif stage in CLAIM_STAGES:
                fixed = claim_substitution(stage, item, sources)
                outcomes[stage] = fixed if isinstance(fixed, str) else reprocess(pipeline, item, fixed)
            else:
                raise ValueError(f"attribution.counterfactual.stages: unknown stage {stage!r}; expected stages of "
                                 f"{', '.join(DOC_STAGES + CLAIM_STAGES)}")
        ff = first_failure(case, item, settings.thresholds, search_gold_queries)
        cf = counterfactual_blame(item, outcomes)
        rows.append({
            "case_id": case["case_id"], "claim_id": item.claim["claim_id"], "lang": case["lang"],
            "error_type": item.claim.get("error_type", case.get("error_type")), "claim": item.claim["text"],
            "gold_label": item.gold_label, "pred_label": item.label,
            "pred_claim": item.final.text if item.final else None, "match_sim": item.final_sim,
            "draft": item.draft_match[0] if item.draft_match else None,
            "first_failure": ff.stage, "first_failure_evidence": ff.evidence,
            "counterfactual": cf.stage, "counterfactual_evidence": cf.evidence,
            "fixers": cf.details["fixers"], "substitution_labels": cf.details["labels"],
        })
    return rows
