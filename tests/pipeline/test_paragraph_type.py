"""The paragraph-type stage: the SciFact section parser, the written gold's validation, the dataset's splits, the
stage's metric and wiring, its classifier task, and the typer keying the routing table in the pipeline (with the
patterns answering when it fails)."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
from checker_support import professional, route
from dspy.utils.dummies import DummyLM
from hydra.utils import instantiate

from factlab.config import compose_config
from factlab.data.errors import CaseError
from factlab.data.loaders.sections import load, read_gold, sections
from factlab.programs.paragraph_type import ParagraphTyper, metric, to_examples
from factlab.train.tasks import paragraph_type_task

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "datasets" / "layers" / "paragraph_types.jsonl"


def test_sections_split_a_structured_abstract_at_its_headings():
    got = sections(["OBJECTIVE To test X.", "METHODS AND RESULTS We did Y.", "CONCLUSIONS The drug works.",
                    "It is cheap."])
    assert got == [("OBJECTIVE", "To test X."), ("METHODS AND RESULTS", "We did Y."),
                   ("CONCLUSIONS", "The drug works. It is cheap.")]


def test_the_written_gold_is_valid_and_covers_every_type_in_both_languages():
    cases = read_gold(GOLD)
    assert {(c["lang"], c["paragraph_type"]) for c in cases} == {
        (lang, kind) for lang in ("en", "zh") for kind in ("background", "method", "results", "limitations")}


@pytest.mark.parametrize(("line", "field"), [
    ({"case_id": "a", "lang": "en", "text": "t", "paragraph_type": "appendix"}, "paragraph_type"),
    ({"case_id": "a", "lang": "fr", "text": "t", "paragraph_type": "method"}, "lang"),
    ({"case_id": "a", "lang": "en", "text": "", "paragraph_type": "method"}, "text"),
    ({"case_id": "a", "lang": "en", "text": "t", "paragraph_type": "method", "x": 1}, "x"),
])
def test_a_bad_gold_line_names_file_line_and_field(tmp_path, line, field):
    path = tmp_path / "types.jsonl"
    good = {"case_id": "g", "lang": "en", "text": "t", "paragraph_type": "results"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(CaseError) as raised:
        read_gold(path)
    assert raised.value.field == field and f"{path}:2" in str(raised.value)


def test_the_dataset_without_public_data_is_the_written_gold_split_three_ways(tmp_path):
    cases = load(name="paragraph_types", gold=str(GOLD), fractions={"train": 0.6, "val": 0.15, "test": 0.25},
                 seed=0, public={"data_root": str(tmp_path), "file": "missing.csv"})
    assert len(cases) == len(read_gold(GOLD)) and {c["split"] for c in cases} == {"train", "val", "test"}
    examples = [e for c in cases for e in to_examples(c)]
    assert len(examples) == len(cases) and set(examples[0].inputs().keys()) == {"paragraph"}
    rows = paragraph_type_task().rows(cases)
    assert {r.gold for r in rows} == set(paragraph_type_task().labels)


def test_the_metric_names_the_expected_role():
    gold = dspy.Example(paragraph="x", paragraph_type="method")
    assert metric(gold, dspy.Prediction(paragraph_type="method")).score == 1.0
    wrong = metric(gold, dspy.Prediction(paragraph_type="results"))
    assert wrong.score == 0.0 and "expected method (how the work was done" in wrong.feedback


def test_the_stage_answers_one_of_the_types():
    with dspy.context(lm=DummyLM([{"paragraph_type": "limitations"}])):
        assert ParagraphTyper()(paragraph="Future studies should test more sites.").paragraph_type == "limitations"


class _Typer:
    def __init__(self, answer):
        self.answer, self.calls = answer, 0

    def __call__(self, paragraph):
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return dspy.Prediction(paragraph_type=self.answer)


def test_the_typer_keys_the_routing_table_and_the_patterns_answer_when_it_fails(default_rules, hashing_retriever):
    cfg = compose_config("verify", ["input=x", "sources=y", "routing=default"])
    retriever = hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}])
    typed = professional({}, retriever, default_rules, routing=instantiate(cfg.routing), typer=_Typer("limitations"))
    assert route(typed, "We found that rates rose.") == ("limitations", [])  # facts off, no logic / consistency on
    failing = _Typer(RuntimeError("LM down"))
    fallback = professional({}, retriever, default_rules, routing=instantiate(cfg.routing), typer=failing)
    assert route(fallback, "We found that rates rose.")[0] == "results" and failing.calls == 1


def test_a_checker_without_an_lm_needs_the_classifier_backend(default_rules, hashing_retriever):
    from checker_support import fast

    typer = instantiate(compose_config("verify", ["input=x", "sources=y", "paragraph_typer=stage"]).layers).typer
    assert typer.backend == "program"
    retriever = hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}])
    with pytest.raises(ValueError, match="backend=classifier"):
        fast({}, retriever, default_rules, typer=typer)
    assert instantiate(compose_config("verify", ["input=x", "sources=y"]).layers).typer is None
