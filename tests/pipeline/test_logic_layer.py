"""The logic layer: the rule path on each kind in both languages, the gold files (validation, the loader's split by
group with the held-out file in test), the stage's metric and wiring, and the layer inside the pipeline (findings as
cards, routing, a failed check leaving the document carded)."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
from checker_support import professional
from dspy.utils.dummies import DummyLM
from hydra.utils import instantiate

from factlab.cards.html import render_html
from factlab.cards.model import Report
from factlab.checkers.logic import LogicLayer, issues_of
from factlab.config import compose_config
from factlab.data.errors import CaseError
from factlab.data.loaders.layer_gold import read_logic_gold
from factlab.programs.logic import LogicChecker, metric, score_verdict, to_examples
from factlab.rules.logic import LogicRules

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "datasets" / "layers" / "logic_gold.jsonl"
HOLDOUT = ROOT / "datasets" / "layers" / "logic_holdout.jsonl"


@pytest.mark.parametrize(("paragraphs", "kind", "keyword"), [
    (["An observational study linked screen time to poor sleep.", "Screens cause insomnia in teenagers."],
     "causal_overclaim", "cause"),
    (["观察性研究显示，通勤时间长的人幸福感较低。", "长时间通勤导致了幸福感下降。"], "causal_overclaim", "导致"),
    (["In rats, the diet cut tumour growth by half, which shows it works for patients."], "scope_shift", "patients"),
    (["在小鼠中，该药使血糖下降30%，可用于治疗糖尿病患者。"], "scope_shift", "患者"),
    (["In mice, drug Q halved blood sugar.", "People with diabetes should therefore take drug Q."], "carried_over",
     "People"),
    (["A poll of 300 fans found the coach popular.", "The coach will always keep the job."], "overgeneralisation",
     "always"),
    (["一项针对30名学生的研究发现，晨读提高了记忆。", "晨读一定能提高成绩。"], "overgeneralisation", "一定"),
    (["对300家小微企业的抽样调查显示，贷款利率下降0.8个百分点。这说明全国小微企业的融资成本已经普遍下降。"],
     "scope_shift", "全国"),
])
def test_each_rule_finds_its_kind_with_the_premise(paragraphs, kind, keyword):
    issues = LogicRules().check(paragraphs)[-1]
    assert [(i.kind, i.keyword) for i in issues] == [(kind, keyword)]
    assert issues[0].premise and issues[0].reason


@pytest.mark.parametrize("paragraphs", [
    ["An observational study linked screen time to poor sleep.", "It does not show that screens cause insomnia."],
    ["In a randomised controlled trial, the drug lowered blood pressure.", "The drug lowered blood pressure."],
    ["在小鼠中，该药使血糖下降30%。该药对患者是否有效尚不清楚。"],
    ["Smoking causes lung cancer, as decades of cohort studies established."],
    ["问卷调查显示，倾向于更多储蓄的居民占比达到61.8%。居民预防性储蓄意愿偏高。"],  # 预防性 is not "prevents"
    ["据最新统计，地震共造成23人遇难、186人受伤。"],  # a reported toll, not a statistic turned into a cause
    ["调查发现，喝茶的人血压较低。", "会议于次日举行。", "饮茶可以预防高血压。"],  # a premise two paragraphs up
])
def test_hedged_experimental_or_established_conclusions_are_sound(paragraphs):
    assert LogicRules().check(paragraphs)[-1] == []


def test_a_bad_cue_pattern_names_its_list():
    with pytest.raises(ValueError, match="causal: bad regular expression"):
        LogicRules(causal=["(unclosed"])


def test_the_gold_files_are_valid_and_cover_both_languages_and_every_kind():
    for path in (GOLD, HOLDOUT):
        docs = read_logic_gold(path)
        assert {d["lang"] for d in docs} == {"en", "zh"}
        kinds = {f["kind"] for d in docs for f in d["findings"]}
        assert kinds == {"causal_overclaim", "scope_shift", "carried_over", "overgeneralisation"}
        assert sum(not d["findings"] for d in docs) >= len(docs) // 4  # clean near misses


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d.update(lang="fr"), "lang"),
    (lambda d: d["findings"].append({"paragraph": 9, "kind": "scope_shift", "keyword": "x"}), "findings[0].paragraph"),
    (lambda d: d["findings"].append({"paragraph": 1, "kind": "scope_shift", "keyword": "not in it"}),
     "findings[0].keyword"),
    (lambda d: d["findings"].append({"paragraph": 1, "kind": "fallacy", "keyword": "A"}), "findings[0].kind"),
    (lambda d: d.pop("group"), "group"),
])
def test_a_bad_gold_line_names_file_line_and_field(tmp_path, edit, field):
    good = {"doc_id": "d1", "lang": "en", "group": "g", "paragraphs": ["A b c."], "findings": []}
    bad = json.loads(json.dumps(good))
    bad["doc_id"] = "d2"
    edit(bad)
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(CaseError) as raised:
        read_logic_gold(path)
    assert raised.value.field == field and f"{path}:2" in str(raised.value)


def test_the_dataset_splits_by_group_and_puts_the_held_out_file_in_test():
    cfg = compose_config("optimize", ["stage=logic", "dataset=logic_gold"])
    cases = instantiate(cfg.dataset)
    by_group = {}
    for doc in read_logic_gold(GOLD):
        by_group.setdefault(doc["group"], set()).add(next(c["split"] for c in cases if c["case_id"] == doc["doc_id"]))
    assert all(len(splits) == 1 for splits in by_group.values())
    held = {d["doc_id"] for d in read_logic_gold(HOLDOUT)}
    assert {c["split"] for c in cases if c["case_id"] in held} == {"test"}
    examples = [e for c in cases for e in to_examples(c)]
    assert len(examples) == sum(len(c["paragraph_texts"]) for c in cases)
    assert {e.verdict for e in examples} >= {"sound", "carried_over"}


def test_the_rules_hold_on_the_developers_gold():
    """A regression guard: the same developers wrote the rules and this gold (the held-out file measures them)."""
    scores = []
    rules = LogicRules()
    for doc in read_logic_gold(GOLD):
        gold = {f["paragraph"]: f for f in doc["findings"]}
        for index, issues in enumerate(rules.check(doc["paragraphs"])):
            want = gold.get(index + 1)
            got = issues[0] if issues else None
            scores.append(score_verdict(want["kind"] if want else "sound", want["keyword"] if want else "",
                                        got.kind if got else "sound", got.keyword if got else "")[0])
    assert sum(scores) / len(scores) >= 0.85


def test_the_metric_scores_and_names_each_failure():
    gold = dspy.Example(verdict="scope_shift", keyword="in patients")
    cases = [("scope_shift", "patients", 1.0, "Correct"), ("scope_shift", "mice", 0.75, "span at issue"),
             ("causal_overclaim", "x", 0.5, "wrong kind"), ("sound", "", 0.0, "Missed")]
    for verdict, keyword, score, words in cases:
        out = metric(gold, dspy.Prediction(verdict=verdict, keyword=keyword))
        assert out.score == score and words in out.feedback
    alarm = metric(dspy.Example(verdict="sound", keyword=""), dspy.Prediction(verdict="carried_over", keyword="x"))
    assert alarm.score == 0.0 and "False alarm" in alarm.feedback


def test_the_stage_parses_its_answer_and_drops_a_span_the_paragraph_lacks():
    paragraph = "In mice, X cut tumours; X cures cancer in patients."
    lm = DummyLM([{"verdict": "scope_shift", "keyword": "in patients", "reason": "mice to patients"},
                  {"verdict": "scope_shift", "keyword": "invented span", "reason": "r"},
                  {"verdict": "sound", "keyword": "", "reason": "r"}])
    with dspy.context(lm=lm):
        program = LogicChecker()
        first, second, third = (program(paragraph=paragraph, earlier="") for _ in range(3))
    assert [(i.kind, i.keyword) for i in issues_of(first, paragraph)] == [("scope_shift", "in patients")]
    assert [(i.kind, i.keyword) for i in issues_of(second, paragraph)] == [("scope_shift", "")]
    assert third.verdict == "sound" and issues_of(third, paragraph) == []
    with dspy.context(lm=DummyLM([{"verdict": "Scope shift # the claim widens", "keyword": "", "reason": "r"},
                                  {"verdict": "nonsense", "keyword": "", "reason": "r"}])):
        loose, unknown = (LogicChecker()(paragraph=paragraph, earlier="") for _ in range(2))
    assert loose.verdict == "scope_shift" and unknown.verdict == "sound"  # a small LM's loose answer is read


def test_the_fast_checker_refuses_the_lm_engine_and_off_turns_the_layer_off(default_rules, hashing_retriever):
    from checker_support import fast

    layers = instantiate(compose_config("verify", ["input=x", "sources=y", "logic=stage"]).layers)
    assert layers.logic.engine == "stage" and layers.uses_lm()
    retriever = hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}])
    with pytest.raises(ValueError, match="use logic=rules or logic=off"):
        fast({}, retriever, default_rules, logic=layers.logic)
    assert instantiate(compose_config("verify", ["input=x", "sources=y", "logic=off"]).layers).logic is None
    assert instantiate(compose_config("verify", ["input=x", "sources=y"]).layers).logic.engine == "rules"


class _Boom:
    def __call__(self, **kwargs):
        raise RuntimeError("LM down")


def _document():
    document = ("A cross-sectional survey found that tea drinkers had lower blood pressure.\n\n"
                "Tea therefore prevents hypertension.\n\n"
                "One limitation is that the survey was small.")
    paragraphs = [{"text": t, "start": document.index(t), "end": document.index(t) + len(t)}
                  for t in document.split("\n\n")]
    rows = [[{"text": p["text"], "checkworthy": False, "reason": "test"}] for p in paragraphs]
    return document, {"paragraphs": paragraphs, "checkworthy": rows}


def test_logic_findings_are_cards_beside_the_fact_cards(default_rules, hashing_retriever):
    cfg = compose_config("verify", ["input=x", "sources=y", "routing=default"])
    retriever = hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}])
    pipeline = professional({}, retriever, default_rules, progress=False, routing=instantiate(cfg.routing),
                            logic=instantiate(cfg.logic))
    document, fixed = _document()
    report = pipeline.run(document, fixed=fixed).report
    assert [p.layers for p in report.paragraphs] == [["facts", "logic"], ["facts", "logic"], ["logic"]]
    assert [(f.layer, f.kind, f.keyword, f.paragraph_id, f.other_paragraph_id) for f in report.findings] == [
        ("logic", "causal_overclaim", "prevents", "p2", "p1")]
    assert report.findings[0].suggested_action.startswith("Write 'is associated with'")
    assert report.summary["findings"] == {"logic": 1}
    assert Report.from_dict(report.to_dict()).findings == report.findings
    assert 'class="finding layer-logic"' in render_html(report)


def test_a_failed_logic_check_leaves_the_document_carded_without_the_layer(default_rules, hashing_retriever):
    retriever = hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}])
    pipeline = professional({}, retriever, default_rules, progress=False, logic=LogicLayer(LogicRules(), _Boom()))
    document, fixed = _document()
    report = pipeline.run(document, fixed=fixed).report
    assert len(report.paragraphs) == 3 and report.findings == []
    assert all("logic" not in p.layers for p in report.paragraphs)


class _Strength:
    """A stand-in causal-strength head: `direct_causal` for sentences naming a verb of the list, else `none`."""

    labels = ("none", "correlational", "conditional_causal", "direct_causal")

    def __init__(self, verbs=("lifts", "让", "prevents")):
        self.verbs, self.seen = verbs, []

    def predict_proba(self, texts):
        self.seen += texts
        return [[0.1, 0.0, 0.0, 0.9] if any(v in t for v in self.verbs) else [0.9, 0.0, 0.0, 0.1] for t in texts]


def test_the_strength_path_needs_an_observational_premise_and_no_experiment_or_hedge():
    from factlab.checkers.strength import StrengthOverclaim

    layer = StrengthOverclaim(_Strength(), window=None)
    doc = ["Methods. A cohort of 900 commuters was followed; cycling was associated with fewer sick days.",
           "Results. Sick days were 12% lower among cyclists.",
           "Conclusion. Cycling to work lifts productivity for every employee."]
    assert StrengthOverclaim(_Strength()).check(doc, 2) == []  # window 1 (the default): the design is 2 back
    found = layer.check(doc, 2)
    assert [(i.kind, i.keyword, i.premise_paragraph) for i in found] == [
        ("causal_overclaim", "Cycling to work lifts productivity for every employee.", 0)]
    assert "associated" in found[0].premise
    assert layer.check(doc[:2] + ["Conclusion. Cycling may lift productivity."], 2) == []  # hedged
    randomised = ["Methods. Commuters were randomised to cycling or driving; cycling was associated with fewer "
                  "sick days."] + doc[1:]
    assert layer.check(randomised, 2) == []  # an experiment was stated
    assert layer.check(["Conclusion. Cycling lifts productivity."], 0) == []  # no design stated: no premise
    zh = ["方法：对900名通勤者进行队列随访，骑行与病假减少相关。", "结论：骑行让员工更健康。"]
    assert layer.check(zh, 1) == []  # English only by default (trained on English)
    assert [i.kind for i in StrengthOverclaim(_Strength(), languages=("en", "zh")).check(zh, 1)] == ["causal_overclaim"]


class _StrengthGap(_Strength):
    """Also reads sentences naming "went with" as `correlational`."""

    def predict_proba(self, texts):
        rows = super().predict_proba(texts)
        return [[0.1, 0.8, 0.0, 0.1] if "went with" in t else row for t, row in zip(texts, rows, strict=True)]


def test_the_model_premise_reads_a_correlational_result_without_design_words():
    from factlab.checkers.strength import StrengthOverclaim

    doc = ["Results. Higher cycling rates went with fewer sick days.",
           "Conclusion. Cycling to work lifts productivity."]
    assert StrengthOverclaim(_StrengthGap()).check(doc, 1) == []  # no design cue: the default premise is absent
    found = StrengthOverclaim(_StrengthGap(), premise="model").check(doc, 1)
    assert [(i.kind, i.premise_paragraph) for i in found] == [("causal_overclaim", 0)]
    assert "went with" in found[0].premise and "reads as correlational" in found[0].reason
    either = StrengthOverclaim(_StrengthGap(), premise="either")
    assert len(either.check(doc, 1)) == 1
    assert either.check([doc[0], "Conclusion. Cycling may lift productivity."], 1) == []  # hedged
    assert either.check(["Results. Cycling lifts productivity.", doc[1]], 1) == []  # the premise is itself causal
    with pytest.raises(ValueError, match="premise"):
        StrengthOverclaim(_StrengthGap(), premise="words")


def test_the_strength_path_only_adds_where_the_engine_found_no_causal_overclaim():
    from factlab.checkers.logic import LogicLayer
    from factlab.checkers.strength import StrengthOverclaim

    model = _Strength()
    layer = LogicLayer(LogicRules(), strength=StrengthOverclaim(model))
    doc = ["A survey linked tea to lower blood pressure.", "Tea therefore prevents hypertension."]
    assert [i.kind for i in layer.check(doc, 1)] == ["causal_overclaim"]  # the rules' own finding, once
    assert model.seen == []  # the model was not asked
    with pytest.raises(ValueError, match="min_prob"):
        StrengthOverclaim(model, min_prob=2)


def test_logic_rules_strength_config_builds_the_model_path():
    cfg = compose_config("verify", ["input=x", "sources=y", "logic=rules_strength"])
    layer = instantiate(cfg.layers).logic
    assert layer.engine == "rules" and layer.strength.min_prob == 0.5 and layer.strength.languages == ("en",)
    assert instantiate(compose_config("verify", ["input=x", "sources=y"]).layers).logic.strength is not None
    assert layer.strength._model == "factlab:causal-strength-e5s-v1"  # loaded on first use, not at build
    assert layer.scope is None  # the scope model is opt-in
    both = instantiate(compose_config("verify", ["input=x", "sources=y", "logic=rules_models"]).layers).logic
    assert both.strength is not None and both.scope._model == "factlab:scope-e5s-v1" and both.scope.window == 1


class _Scope:
    """A stand-in scope head: `lab` for sentences naming mice, `restricted` for nurses, `general` for people."""

    labels = ("none", "lab", "restricted", "general")

    def __init__(self):
        self.seen = []

    def predict_proba(self, texts):
        self.seen += texts
        rows = []
        for t in texts:
            hot = 1 if "mice" in t else 2 if "nurses" in t else 3 if "people" in t or "人" in t else 0
            rows.append([0.9 if i == hot else 0.1 / 3 for i in range(4)])
        return rows


def test_the_scope_path_flags_a_wider_conclusion_and_names_its_premise():
    from factlab.checkers.scope import ScopeShift

    layer = ScopeShift(_Scope())
    doc = ["Methods. Forty mice were fed the extract for six weeks.",
           "Results. Treated mice gained less weight. The extract helps people lose weight."]
    found = layer.check(doc, 1)
    assert [(i.kind, i.keyword, i.premise_paragraph) for i in found] == [
        ("scope_shift", "The extract helps people lose weight.", None)]
    assert "mice" in found[0].premise and "general" in found[0].reason and "lab" in found[0].reason
    assert layer.check(["Forty mice were fed the extract.", "The extract may help people lose weight."], 1) == []
    assert layer.check(["Nurses slept less.", "Treated mice gained less weight."], 1) == []  # narrower: no finding
    trial = ["Forty mice were fed the extract.",
             "A randomised trial in 300 people then tested it. The extract helps people lose weight."]
    assert layer.check(trial, 1) == []  # a study at the conclusion's scope was stated in between
    assert layer.check(["Forty mice were fed the extract.", "x", "The extract helps people lose weight."], 2) == []
    assert layer.check(["在小鼠中有效。", "这种提取物能帮助人减肥。"], 1) == []  # English only by default
    assert ScopeShift(_Scope(), window=0).check(doc[:1] + ["The extract helps people lose weight."], 1) == []
    for bad in ({"min_prob": 2}, {"window": -1}, {"min_overlap": -0.1}):
        with pytest.raises(ValueError, match="conf/logic: scope"):
            ScopeShift(_Scope(), **bad)


def test_the_scope_path_can_ask_that_the_conclusion_asserts_an_effect():
    from factlab.checkers.scope import ScopeShift

    doc = ["Forty mice were fed the extract.", "In total, 386 people were screened. The extract helps people slim."]
    assert [i.keyword for i in ScopeShift(_Scope()).check(doc, 1)] == ["In total, 386 people were screened."]
    effect = _Strength(verbs=("helps",))  # reads "helps" as a direct cause, the screening count as none
    found = ScopeShift(_Scope(), effect_model=effect).check(doc, 1)
    assert [i.keyword for i in found] == ["The extract helps people slim."]
    assert ScopeShift(_Scope(), effect_model=_Strength(verbs=())).check(doc, 1) == []


def test_the_scope_path_only_adds_where_the_engine_found_no_scope_shift():
    from factlab.checkers.logic import LogicLayer
    from factlab.checkers.scope import ScopeShift

    model = _Scope()
    layer = LogicLayer(LogicRules(), scope=ScopeShift(model))
    doc = ["Forty mice were fed the extract; treated mice gained less weight.", "The extract helps people lose weight."]
    assert [i.kind for i in layer.check(doc, 1)] == ["scope_shift"] and model.seen  # the model's finding
    ruled = ["In mice, the extract cut weight gain.", "The extract can therefore treat obesity in humans."]
    assert [i.kind for i in LogicLayer(LogicRules()).check(ruled, 1)] == ["carried_over"]  # the rules find it alone
    model.seen.clear()
    assert [i.kind for i in layer.check(ruled, 1)] == ["carried_over"] and model.seen == []  # once; no model asked


def test_a_partial_effect_reported_as_a_cure_is_an_overgeneralisation():
    rules = LogicRules()

    def found(paragraph, earlier=()):
        return [(i.kind, i.keyword) for i in rules.check_paragraph(paragraph, list(earlier))]

    assert found("Pain scores fell by 30% over eight weeks. The cream therefore cures arthritis.") == [
        ("overgeneralisation", "cures")]
    assert found("讨论：该疗法可以根治慢性鼻炎。", ["结果：治疗组鼻塞评分降低了27%。"]) == [
        ("overgeneralisation", "根治")]
    assert found("Pain scores fell by 30%. The cure rate was 12%.") == []  # a rate's name is a measure
    assert found("Pain scores fell by 30%. The cream may cure some cases.") == []  # hedged
    assert found("The infection was eradicated in all 40 patients.") == []  # no partial effect stated before


def test_a_negated_cure_word_is_the_partial_effect_itself():
    rules = LogicRules()
    for paragraph in ("Soiling losses fell by 40%. Cleaning reduced, but did not eliminate, soiling.",
                      "病害率下降了20%，但并未完全消除病害。", "Pain fell by 30%. It cannot cure the disease."):
        assert rules.check_paragraph(paragraph, []) == [], paragraph
    overreach = "病株率由18.5%降至13.9%，降幅约25%。该模式可以彻底消除纹枯病。"
    assert [i.keyword for i in rules.check_paragraph(overreach, [])] == ["彻底消除"]
