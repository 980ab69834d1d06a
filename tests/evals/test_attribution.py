"""Attribution on synthetic pipelines with one known broken stage: both methods must blame that stage for all and
only the claims it breaks (the claims whose label differs from the healthy pipeline's)."""

from __future__ import annotations

import pytest

from factlab.evals.evaluation import evaluate_cases
from factlab.evals.scores import attribution_metrics, stage_metrics


def labels(evaluation) -> dict[tuple[str, str], str]:
    return {(c["case_id"], i["claim_id"]): i["pred_label"] for c in evaluation.cases for i in c["items"]}


@pytest.fixture
def healthy(make_pipeline, cases, matcher, settings, retriever):
    return evaluate_cases(make_pipeline(), cases, matcher, settings, retriever.index.sources)


def test_the_healthy_pipeline_reproduces_every_gold(healthy):
    assert healthy.attribution == []
    metrics = stage_metrics(healthy.cases)
    for name in ("paragraphs/boundary_f1", "checkworthy/accuracy", "checkworthy/f1", "extract_claims/precision",
                 "extract_claims/recall", "review_claims/recall", "vertical/accuracy", "retrieval/recall_at_k",
                 "judge/macro_f1", "judge/balanced_accuracy", "judge_given_gold/macro_f1", "label/accuracy",
                 "label/macro_f1", "e2e/risk_coverage"):
        assert metrics[name] == 1.0, name
    assert metrics["e2e/false_alarm_rate"] == 0.0
    assert metrics["items"] == 9 and metrics["e2e/problematic_paragraphs"] == 4


@pytest.mark.parametrize(("stage", "mode"), [
    ("judge", "always_support"),
    ("query_rewrite", "empty"),
    ("extract_claims", "drop_last"),
])
def test_both_methods_blame_the_broken_stage_for_exactly_what_it_breaks(stage, mode, healthy, make_pipeline, cases,
                                                                         matcher, settings, retriever):
    broken = evaluate_cases(make_pipeline({stage: mode}), cases, matcher, settings, retriever.index.sources)
    before, after = labels(healthy), labels(broken)
    changed = {key for key in before if before[key] != after[key]}
    assert changed and len(changed) < len(before)  # the broken stage breaks some claims, not all
    blamed = {(r["case_id"], r["claim_id"]): r for r in broken.attribution}
    assert set(blamed) == changed
    for key, row in blamed.items():
        assert row["first_failure"] == stage, (key, row["first_failure"], row["first_failure_evidence"])
        assert row["counterfactual"] == stage, (key, row["counterfactual"], row["counterfactual_evidence"])
        assert row["first_failure_evidence"] and row["counterfactual_evidence"]
    metrics = attribution_metrics(broken.attribution, items=len(before))
    for method in ("first_failure", "counterfactual"):
        assert metrics[f"attr/{method}/{stage}/count"] == len(changed)
        assert metrics[f"attr/{method}/{stage}/share"] == 1.0


def test_a_broken_judge_does_not_touch_the_judge_given_gold_evidence_of_correct_claims(make_pipeline, cases, matcher,
                                                                                      settings, retriever):
    broken = evaluate_cases(make_pipeline({"judge": "always_support"}), cases, matcher, settings,
                            retriever.index.sources)
    metrics = stage_metrics(broken.cases)
    assert metrics["judge/macro_f1"] < 1.0 and metrics["judge_given_gold/macro_f1"] < 1.0
    assert metrics["retrieval/recall_at_k"] == 1.0 and metrics["vertical/accuracy"] == 1.0


def test_counterfactual_says_several_when_two_independent_substitutions_each_fix_it(make_pipeline, cases, matcher,
                                                                                   settings, retriever):
    """Every claim called medical, and a judge with the right relations at confidence 0.6: a contradicted medical
    claim goes to review (unverifiable) instead of `wrong`. For the science claim both the gold vertical and gold
    judgments fix it, neither changing the other's output (`several`); for the medical claim only the judgments do,
    and no stage is off its first-failure threshold (`rules`)."""
    import dspy
    from checker_support import professional
    from eval_world import fake_stages

    from factlab.schema import Judgment

    stages = fake_stages()
    exact_judge = stages["judge"]

    def timid_judge(claim, evidence):
        return dspy.Prediction(judgments=[Judgment(j.relation, 0.6) for j in
                                          exact_judge(claim=claim, evidence=evidence).judgments])

    stages.update(judge=timid_judge, vertical=lambda claim: dspy.Prediction(vertical="medical", confidence=0.9))
    pipeline = professional(stages, retriever, make_pipeline().rules, k=5, progress=False)
    evaluation = evaluate_cases(pipeline, cases, matcher, settings, retriever.index.sources)
    blamed = {r["claim"]: (r["first_failure"], r["counterfactual"], r["fixers"]) for r in evaluation.attribution}
    assert blamed == {
        "The Orvian comet returns every 76 years.": ("vertical", "several", ["vertical", "judge"]),
        "Aurelin lowered systolic blood pressure by 12 mmHg in the 2019 Velmora trial.": ("rules", "judge", ["judge"]),
    }
