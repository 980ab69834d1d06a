"""The layers beyond facts: the routing table by paragraph type (facts off where the table says so, the table
exception), and the deterministic consistency layer's findings as cards beside the fact cards (JSON, HTML)."""

from __future__ import annotations

import pytest
from checker_support import professional, route
from hydra.utils import instantiate
from omegaconf import OmegaConf

from factlab.cards.html import render_html
from factlab.cards.model import Report
from factlab.config import compose_config
from factlab.rules.document import KINDS, consistency_findings
from factlab.rules.routing import Routing


@pytest.mark.parametrize(("paragraphs", "kind", "keyword"), [
    ([("p1", "A randomised controlled trial (RCT) enrolled adults."), ("p2", "Real-time cardiac telemetry (RCT).")],
     "abbreviation", "RCT"),
    ([("p1", "随机对照试验（RCT）纳入成人。"), ("p2", "真实世界研究（RCT）显示。")], "abbreviation", "RCT"),
    ([("p1", "The dose was 50 mg daily."), ("p2", "剂量提高到100毫克。")], "unit_format", "毫克"),
    ([("p1", "Coverage rose by 3 percentage points."), ("p2", "Uptake rose by 5%.")], "percent_points", "5%"),
    ([("p1", "It enrolled 6,240 adults."), ("p2", "A further 12000 joined.")], "number_format", "12000"),
    ([("p1", "As Smith et al. (2019) showed."), ("p2", "This was confirmed [3].")], "citation_format", "[3]"),
    ([("p1", "The bath ran at 850 °C."), ("p2", "The 850 K step followed.")], "unit_mismatch", "850 K"),
    ([("p1", "线路全长86.5公里。"), ("p2", "按全线86.5英里计，每英里造价较低。")], "unit_mismatch", "86.5英里"),
    ([("p1", "Each plot was a 0.8-hectare strip."), ("p2", "Each 0.8-acre strip was mown.")], "unit_mismatch",
     "0.8-acre"),
    ([("p1", "Coffee is rich in chlorogenic acids (CGA)."), ("p2", "A comprehensive geriatric assessment (CGA).")],
     "abbreviation", "CGA"),  # a definition by Schwartz & Hearst's rule, not by initials
    ([("p1", "以全要素生产率（TFP）衡量。"), ("p2", "TFP（总融资规模）增长较快。")], "abbreviation",
     "TFP"),  # the abbreviation-first order
    ([("p1", "2024年新方案将作业补贴下调为每亩30元。"), ("p2", "按照现行每亩40元的作业补贴标准测算，收益可覆盖成本。")],
     "outdated_value", "40元"),
    ([("p1", "实验组降解率达94.2%。"), ("p2", "结果显示，实验组降解率为92.4%。")], "number_restated", "92.4"),
])
def test_each_consistency_check_finds_its_case_with_both_locations(paragraphs, kind, keyword):
    found = [f for f in consistency_findings(paragraphs) if f.kind == kind]
    assert [f.keyword for f in found] == [keyword]
    assert found[0].paragraph_id == "p2" and found[0].other.paragraph_id == "p1" and found[0].suggested_action


def test_a_consistent_document_has_no_findings():
    paragraphs = [("p1", "A randomised controlled trial (RCT) gave 50 mg to 6,240 adults (Smith, 2019)."),
                  ("p2", "The RCT then gave 100 mg to 1,200 more (Lee, 2020). It was 2021.")]
    assert consistency_findings(paragraphs, KINDS) == []
    converted = [("p1", "Water was kept at 20 °C (68 °F) and flowed at 1.25 m³/s."),
                 ("p2", "At 20 °C the 1.25 m³/s flow held; 5 g of salt and 12 mg of iron were added.")]
    assert consistency_findings(converted, ["unit_mismatch"]) == []  # a conversion states two numbers
    unchanged = [("p1", "The agency raised the minimum to 3.0 mg/L in 2024."),
                 ("p2", "All wells currently exceed the 3.0 mg/L minimum; 12 yuan/t is charged for other tests.")]
    assert consistency_findings(unchanged, ["outdated_value"]) == []  # the current value is the new one
    unrelated = [("p1", "小微贷款同比增长18.5%，余额1.3万亿元。"), ("p2", "著作权案件占比58.1%。"),
                 ("p3", "The museum opened in 1860; it holds 1,680 coins.")]
    assert consistency_findings(unrelated, ["number_restated"]) == []  # other things; a year is no figure


def test_statistics_are_not_figures_restated():
    stats = [("s1", "Risk rose (HR 1.31, 95% CI 1.13 to 1.52) in men."),
             ("s2", "In women it was 2.08 (1.13 to 3.84); mean 32.7 +/- 4.1 mm against 23.7 +/- 3.9 mm.")]
    assert consistency_findings(stats, ["number_restated"]) == []
    slip = [("s1", "Polymer types were confirmed for 1,860 particles."),
            ("s2", "Of those 1,680 particles, most were PE.")]
    assert [f.keyword for f in consistency_findings(slip, ["number_restated"])] == ["1,680"]


def test_a_count_restated_with_another_value_is_an_optional_check():
    paragraphs = [("p1", "The registry holds 18,426 participants enrolled in 2019."),
                  ("p2", "Follow-up letters went to all 17,903 participants enrolled in 2019.")]
    assert consistency_findings(paragraphs) == []  # not a default check (docs/layers.md)
    found = consistency_findings(paragraphs, ["restated_value"])
    assert [(f.kind, f.keyword, f.other.text) for f in found] == [("restated_value", "17,903", "18,426")]
    zh = [("p1", "全年新增确诊病例3156例。"), ("p2", "报告期内新增确诊病例3716例。")]
    assert [f.keyword for f in consistency_findings(zh, ["restated_value"])] == ["3716"]
    apart = [("p1", "We enrolled 18,426 participants."), ("p2", "Of these, 16,842 participants finished."),
             ("p3", "Plots got 190 kg N/ha, then 158 kg N/ha."), ("p4", "A farm used 220 kg N/ha."),
             ("p5", "One study had 134 infants and another 136 infants.")]
    assert consistency_findings(apart, ["restated_value"]) == []  # a subset; a unit of measure; one sentence compares


class _NoLM:
    """A stage that must not be called (the routing table keeps facts off its paragraph)."""

    def __call__(self, **kwargs):
        raise AssertionError(f"stage called with {sorted(kwargs)}")


def test_routing_keeps_facts_off_a_limitations_paragraph_and_findings_become_cards(default_rules, hashing_retriever):
    cfg = compose_config("verify", ["input=x", "sources=y", "routing=default"])
    document = ("Participants were randomised and received 50 mg daily.\n\n"
                "One limitation is that the dose, 100毫克, was not blinded.")
    paragraphs = [{"text": t, "start": document.index(t), "end": document.index(t) + len(t)}
                  for t in document.split("\n\n")]
    rows = [[{"text": paragraphs[0]["text"], "checkworthy": False, "reason": "test"}], None]
    stages = {name: _NoLM() for name in ("paragraphs", "checkworthy", "extract_claims", "review_claims", "vertical",
                                         "query_rewrite", "judge")}
    retriever = hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}])
    pipeline = professional(stages, retriever, default_rules, progress=False, routing=instantiate(cfg.routing),
                            document_checks=list(cfg.document_checks))
    rows[1] = [{"text": paragraphs[1]["text"], "checkworthy": True, "reason": "test"}]
    report = pipeline.run(document, fixed={"paragraphs": paragraphs, "checkworthy": rows}).report
    method, limits = report.paragraphs
    assert (method.paragraph_type, method.layers) == ("method", ["facts", "consistency"])
    assert (limits.paragraph_type, limits.layers) == ("limitations", ["consistency"])
    assert limits.claims and all(not c.checkworthy and "limitations paragraph" in c.suggested_action
                                 for c in limits.claims)
    assert [(f.layer, f.kind, f.keyword, f.paragraph_id, f.other_paragraph_id) for f in report.findings] == [
        ("consistency", "unit_format", "毫克", "p2", "p1")]
    assert report.summary["findings"] == {"consistency": 1}
    again = Report.from_dict(report.to_dict())
    assert again.findings == report.findings and again.paragraphs[1].layers == ["consistency"]
    page = render_html(report)
    assert 'class="finding layer-consistency"' in page and "Write milligram one way" in page


def test_without_routing_every_paragraph_gets_facts_and_consistency(default_rules, hashing_retriever):
    cfg = compose_config("verify", ["input=x", "sources=y"])
    pipeline = professional({}, hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}]), default_rules,
                            routing=instantiate(cfg.routing), document_checks=[])
    assert route(pipeline, "One limitation is the sample.") == ("any", ["facts"])  # consistency layer off: not listed


def test_the_consistency_layer_holds_on_its_gold():
    from factlab.evals.layer_gold import score_consistency

    table = score_consistency()["table"]
    for lang in ("en", "zh"):
        assert table[lang]["findings"] >= 6 and table[lang]["precision"] >= 0.9 and table[lang]["recall"] >= 0.9
        assert table[lang]["false_alarm_docs"].startswith("0 /")


def test_routing_per_business_merges_its_overrides_and_names_a_bad_one(default_rules, hashing_retriever):
    cfg = compose_config("verify", ["input=x", "sources=y", "routing=default", "business=medical"])
    routing = instantiate(cfg.routing)
    rules = instantiate(cfg.business)
    pipeline = professional({}, hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}]), rules,
                            routing=routing, document_checks=["unit_format"])
    assert route(pipeline, "One limitation is the small sample.") == ("limitations", ["facts", "consistency"])
    assert routing.layers_for("One limitation is the small sample.")[1] == ["logic", "consistency"]
    table = {k: v for k, v in OmegaConf.to_container(cfg.routing).items() if k not in ("_target_", "_convert_")}
    with pytest.raises(ValueError, match="by_business.medical.appendix is not one of the types"):
        Routing(**{**table, "by_business": {"medical": {"appendix": {"facts": True}}}})
    with pytest.raises(ValueError, match="unknown layers"):
        Routing(**{**table, "by_business": {"medical": {"method": {"style": True}}}})


def test_public_abstract_false_alarms_stay_fixed():
    """The parsing errors the blind labels of public abstracts showed (docs/layers.md): notation, a bracket naming the
    abbreviation, a plural, identifiers glued to letters."""
    from factlab.rules.document import consistency_findings

    def kinds(*sentences):
        return [f.kind for f in consistency_findings([(f"p{i}", s) for i, s in enumerate(sentences)])]

    assert kinds("We measured nitric oxide (NO) in breath.", "Oral FE(NO) rose after nitrate.") == []
    assert kinds("Age-related macular degeneration (AMD) was graded.",
                 "Two subtypes of late AMD (neovascular AMD and pure geographic atrophy) were counted.") == []
    assert kinds("Entomological inoculation rates (EIR) were modelled.",
                 "The entomological inoculation rate (EIR) varied from 0 to 166.") == []
    assert kinds("Data came from 11,685 participants.", "Two SNPs (rs599839 and rs4970834) and NCT00464204.") == []
    # the checks still fire on the real thing
    assert kinds("Patients with pulmonary disease (PD) took part.", "Peritoneal dialysis (PD) was then started.") == [
        "abbreviation"]
    assert kinds("Data came from 11,685 participants.", "A further 12000 were added.") == ["number_format"]


def test_term_drift_ties_one_figure_or_one_definition_to_two_terms():
    from factlab.rules.document import DEFAULT_KINDS, consistency_findings

    assert "term_drift" in DEFAULT_KINDS

    def drift(*paragraphs):
        found = consistency_findings([(f"p{i + 1}", p) for i, p in enumerate(paragraphs)], ["term_drift"])
        return [(f.paragraph_id, f.keyword, f.other.paragraph_id) for f in found]

    # one figure under two terms of a group, in two paragraphs (a decimal point is not a sentence end)
    assert drift("Results. The absolute risk reduction was 3.1% at one year.",
                 "Discussion. A relative risk reduction of 3.1% matters.") == [
        ("p2", "relative risk reduction of 3.1%", "p1")]
    assert drift("结果：中位年龄为56.5岁。", "讨论：平均年龄56.5岁的人群中……") == [("p2", "平均年龄56.5", "p1")]
    # a defined measure reported later under the other term of its group, which the document never defines
    defined = ("Definitions. Prevalence is the proportion of adults with the disease on 31 December.",
               "Findings. Prevalence was 8.7%.", "Interpretation. The rise in incidence from 7.9% to 8.7% is large.")
    assert drift(*defined) == [("p3", "incidence", "p1")]  # once: the figure tie to p2 names the same two terms
    zh = ["方法：本文所称“近视检出率”指调查时点筛查为近视的学生所占比例。", "讨论：每年新发近视比例高达80.5%。"]
    assert [k for _, k, _ in drift(*zh)] == ["新发"]
    # near misses: both terms defined; a 95% confidence level; two ratios of one value for two comparisons
    assert drift("Prevalence is the proportion with the disease. Incidence is the number of new diagnoses.",
                 "Incidence was 5.2 per 1,000 and prevalence 8.7%.") == []
    assert drift("The odds ratio was 1.8 (95% CI 1.2 to 2.6).", "The hazard ratio was 2.1 (95% CI 1.5 to 2.9).") == []
    assert drift("Smokers had an OR of 1.06 for stroke.", "Drinkers had an RR of 1.06 for falls.") == []
    assert drift("Median age was 56 years.", "Median follow-up was 56 months.") == []


def test_pressure_power_and_duration_units_are_compared():
    from factlab.rules.document import consistency_findings

    def mismatches(*paragraphs):
        found = consistency_findings([(f"p{i}", p) for i, p in enumerate(paragraphs)], ["unit_mismatch"])
        return [f.keyword for f in found]

    assert mismatches("Mains pressure was held at 0.35 MPa.", "At 0.35 kPa, leaks fell.") == ["0.35 kPa"]
    assert mismatches("管网压力保持在0.35兆帕。", "在0.35千帕条件下漏损下降。") == ["0.35千帕"]
    assert mismatches("The array delivers 12 MW.", "Its 12 kW output ...") == ["12 kW"]
    assert mismatches("Sessions of 45 minutes each week.", "The 45-hour sessions clashed.") == ["45-hour"]
    assert mismatches("Samples at 3 min.", "Samples again at 3 h.") == []  # small timings: two time points
