"""Scores of an evaluation: per stage, final label, end to end and attribution shares, from the JSON-able records of
factlab/evals/evaluation.py (the classification metrics themselves are factlab.metrics').
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from factlab.evals.alignment import ERROR, MISSED
from factlab.evals.attribution import COUNTERFACTUAL_OUTCOMES, FIRST_FAILURE_STAGES
from factlab.metrics import balanced_accuracy, binary_f1, confusion_counts, f1, macro_f1
from factlab.schema import LABELS, RELATIONS

METHODS: dict[str, tuple[str, ...]] = {"first_failure": FIRST_FAILURE_STAGES, "counterfactual": COUNTERFACTUAL_OUTCOMES}
# The metrics that get bootstrap confidence intervals.
HEADLINE: tuple[str, ...] = ("label/accuracy", "label/macro_f1", "e2e/risk_coverage", "e2e/false_alarm_rate",
                             "judge/macro_f1", "extract_claims/recall")


def _mean(values: Sequence[float]) -> float | None:
    """Mean, None for no values.

    >>> _mean([1, 0, 1, 0]), _mean([])
    (0.5, None)
    """
    return sum(values) / len(values) if values else None


def stage_metrics(cases: Sequence[Mapping]) -> dict[str, float | None]:
    """Every per-stage, final-label and end-to-end metric from case records (None where nothing was scorable)."""
    out: dict[str, float | None] = {}
    paragraphs = [c["paragraphs"] for c in cases if "paragraphs" in c]
    out["paragraphs/boundary_f1"] = _mean([p["f1"] for p in paragraphs])
    out["paragraphs/boundary_precision"] = _mean([p["precision"] for p in paragraphs])
    out["paragraphs/boundary_recall"] = _mean([p["recall"] for p in paragraphs])
    sentences = [s for c in cases for s in c["sentences"]]
    out["checkworthy/accuracy"] = _mean([s["correct"] for s in sentences])
    out["checkworthy/f1"] = binary_f1([(s["gold"], s["pred"]) for s in sentences])
    for stage in ("extract_claims", "review_claims"):
        gold = sum(c[stage]["gold"] for c in cases)
        pred = sum(c[stage]["pred"] for c in cases)
        matched = sum(c[stage]["matched"] for c in cases)
        precision, recall_ = (matched / pred if pred else None), (matched / gold if gold else None)
        out[f"{stage}/precision"], out[f"{stage}/recall"] = precision, recall_
        out[f"{stage}/f1"] = f1(precision or 0.0, recall_ or 0.0) if gold or pred else None
    items = [i for c in cases for i in c["items"]]
    out["vertical/accuracy"] = _mean([i["vertical_correct"] for i in items if "vertical_correct" in i])
    out["query_rewrite/score"] = _mean([i["query_score"] for i in items if "query_score" in i])
    out["retrieval/recall_at_k"] = _mean([i["recall"] for i in items if i.get("recall") is not None])
    out["retrieval/recall_at_k_gold_queries"] = _mean(
        [i["recall_gold_queries"] for i in items if i.get("recall_gold_queries") is not None])
    judged = [i for i in items if "judge_relation" in i]
    gold_rel, pred_rel = [i["gold_relation"] for i in judged], [i["judge_relation"] for i in judged]
    out["judge/macro_f1"] = macro_f1(gold_rel, pred_rel, RELATIONS)
    out["judge/balanced_accuracy"] = balanced_accuracy(gold_rel, pred_rel)
    out["judge/score"] = _mean([i["judge_score"] for i in judged])
    given = [i for i in items if "judge_given_gold" in i]
    gold_g, pred_g = [i["gold_relation"] for i in given], [i["judge_given_gold"] for i in given]
    out["judge_given_gold/macro_f1"] = macro_f1(gold_g, pred_g, RELATIONS)
    out["judge_given_gold/balanced_accuracy"] = balanced_accuracy(gold_g, pred_g)
    labelled = [i for i in items if i["gold_label"]]
    gold_lab, pred_lab = [i["gold_label"] for i in labelled], [i["pred_label"] for i in labelled]
    out["label/accuracy"] = _mean([float(g == p) for g, p in zip(gold_lab, pred_lab, strict=True)])
    out["label/macro_f1"] = macro_f1(gold_lab, pred_lab, LABELS)
    out["label/matched"] = _mean([float(i["matched"]) for i in labelled])
    paragraphs_e2e = [p for c in cases for p in c["gold_paragraphs"]]
    problematic = [p for p in paragraphs_e2e if p["problematic"]]
    clean = [p for p in paragraphs_e2e if not p["problematic"]]
    out["e2e/risk_coverage"] = _mean([float(p["flagged"]) for p in problematic])
    out["e2e/false_alarm_rate"] = _mean([float(p["flagged"]) for p in clean])
    out["e2e/problematic_paragraphs"] = float(len(problematic))
    out["e2e/clean_paragraphs"] = float(len(clean))
    errors = Counter()
    for case in cases:
        errors.update(case["errors"])
    out.update({f"errors/{kind}": float(n) for kind, n in sorted(errors.items())})
    out["items"] = float(len(labelled))
    out["cases"] = float(len(cases))
    return out


def label_confusion(cases: Sequence[Mapping]) -> dict:
    """Final-label confusion matrix: gold label -> predicted label (LABELS, then missed / error)."""
    items = [i for c in cases for i in c["items"] if i["gold_label"]]
    return confusion_counts([i["gold_label"] for i in items], [i["pred_label"] for i in items], LABELS,
                     (*LABELS, MISSED, ERROR))


def attribution_metrics(rows: Sequence[Mapping], items: int) -> dict[str, float]:
    """`attr/<method>/<stage>/count` and `/share` (of the bad items) for every stage of both methods, plus
    `attr/bad_items` and `attr/bad_share` (of all gold claims).

    >>> m = attribution_metrics([{"first_failure": "judge", "counterfactual": "judge"}], items=4)
    >>> m["attr/first_failure/judge/count"], m["attr/counterfactual/judge/share"], m["attr/bad_share"]
    (1.0, 1.0, 0.25)
    """
    out = {"attr/bad_items": float(len(rows)), "attr/bad_share": len(rows) / items if items else 0.0}
    for method, stages in METHODS.items():
        counts = Counter(r[method] for r in rows)
        for stage in stages:
            out[f"attr/{method}/{stage}/count"] = float(counts[stage])
            out[f"attr/{method}/{stage}/share"] = counts[stage] / len(rows) if rows else 0.0
    return out
