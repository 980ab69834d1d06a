"""What extract_claims is compiled on is what the pipeline feeds it: for every committed case, the pipeline run on the
gold paragraphs and the gold check-worthiness calls the stage with exactly the (paragraph, context) pairs of
`extract_claims.to_examples` (the check-worthy sentences of the paragraph, the summary of the earlier paragraphs).
Until 2026-12-04 the examples held the whole paragraph and the last 300 characters before it instead."""

from __future__ import annotations

import dspy
import pytest
from checker_support import professional

from factlab.checkers.professional import ProfessionalChecker
from factlab.config import compose_config
from factlab.data.registry import load_dataset
from factlab.evals.gold import gold_paragraphs, gold_sentence_rows
from factlab.matching.segment import sentence_rows, sentence_spans
from factlab.programs.extract_claims import to_examples
from factlab.programs.paragraphs import ParagraphSplitter


def _recording_pipeline(rules, calls: list) -> ProfessionalChecker:
    def extract(paragraph, context):
        calls.append((paragraph, context))
        return dspy.Prediction(claims=[])  # nothing reaches retrieval

    stages = {"paragraphs": ParagraphSplitter(), "checkworthy": None, "extract_claims": extract,
              "review_claims": lambda paragraph, claims: dspy.Prediction(reviewed_claims=claims),
              "vertical": None, "query_rewrite": None, "judge": None}
    return professional(stages, None, rules, progress=False)


def _one_pipeline_sentence_each(case: dict) -> bool:
    """Every gold sentence is one sentence to the pipeline's splitter (Chinese gold sometimes keeps a '；' inside)."""
    return all(len(sentence_spans(s["text"])) == 1 for s in case.get("sentences", []))


@pytest.mark.parametrize("dataset", ["bundled", "extra_zh", "vertical_claims"])
def test_the_pipeline_calls_extract_claims_with_the_examples_inputs(dataset, default_rules):
    cases = load_dataset(compose_config("optimize", [f"dataset={dataset}"]).dataset).cases
    comparable = [case for case in cases if _one_pipeline_sentence_each(case)]
    assert len(comparable) >= 0.95 * len(cases)
    calls: list = []
    pipeline = _recording_pipeline(default_rules, calls)
    for case in comparable:
        paragraphs = gold_paragraphs(case)
        rows = [gold_sentence_rows(case, [{**row, "checkworthy": False} for row in sentence_rows(p)])
                for p in paragraphs]
        calls.clear()
        pipeline.run(case["text"], fixed={"paragraphs": paragraphs, "checkworthy": rows})
        expected = [(example.paragraph, example.context) for example in to_examples(case)]
        assert sorted(calls) == sorted(expected), case["case_id"]
