"""The logic layer's rule path, deterministic: reasoning steps inside a paragraph, and conclusions carried over from
the paragraph before it, that go further than their premises.

Kinds (`LOGIC_KINDS`):
- `causal_overclaim`: a correlation (a survey, a cohort, records, an association, self-selected groups) reported as
  a cause ("drinking coffee prevents illness") with no experiment (randomised trial) behind it.
- `scope_shift`: a result obtained under a restricted scope (in mice, in vitro, under laboratory conditions, only
  men aged 50-70, one university's students) stated in the SAME paragraph for a wider one (patients, humans, every
  climate, all ages, the whole country).
- `carried_over`: the same, when the restricted premise is in the paragraph BEFORE and a conclusion drawn here
  (therefore, should, the same, 因此, 同样, ...) widens it (each paragraph alone checks out; the cross-paragraph miss).
- `overgeneralisation`: a conclusion wider than its premises: one small study, a single season, a poll, a
  manufacturer's own test -> "always", "never", "all", "certain", 一定, 必然, 所有.

The rules work on clauses: a clause holding a premise cue (a correlational design, a restricted scope, a small
sample) is a premise; a later clause holding a conclusion cue without a premise cue or a hedge ("may", "is not
known", 可能, 尚不清楚) is a conclusion. Premises are this paragraph's earlier clauses and the paragraph just before
it (a premise five paragraphs up is another topic: on the long bundled report, looking further raised six false
alarms). They see cue words, not meaning: a restricted scope they have no word for
(urban vs rural schools, 1990-2010 data vs a 2080 scenario, a 2019 strain vs this year's variant) is missed; the
LM stage (`factlab.programs.logic`, `logic=stage`) is the path for those. Text is untrusted: it is only matched.

>>> rules = LogicRules()
>>> [(i.kind, i.keyword) for i in rules.check_paragraph("A survey linked tea to lower blood pressure. Tea "
...     "therefore prevents hypertension.", [])]
[('causal_overclaim', 'prevents')]
>>> [(i.kind, i.keyword) for i in rules.check_paragraph("因此，对于想减肥的人来说，服用LH-9有效。",
...     ["在高脂饮食的大鼠中，LH-9使体重增长减少了15%。"])]
[('carried_over', '想减肥的人')]
>>> rules.check_paragraph("In mice, TX-17 reversed fibrosis. Whether it works in humans is not known.", [])
[]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from factlab.schema import LOGIC_KINDS, LOGIC_SOUND

__all__ = ["LOGIC_KINDS", "SOUND", "LogicIssue", "LogicRules"]

SOUND = LOGIC_SOUND  # the verdict of a paragraph without a finding

_CLAUSE = re.compile(r"[^.!?;:,，。！？；：]+[.!?;:,，。！？；：]*")
_SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]*")

# A correlational design: the premise of a causal overclaim.
CORRELATIONAL = (
    # "associated with" / "linked to" as a relation found, not "in association with" (bound together), "X-linked" or
    # "tandemly linked" (a structure): the lab-biology uses read as designs on public abstracts (docs/layers.md)
    r"(?<!\bin )\bassociat(?:ed|ion)\b", r"\bcorrelat", r"(?<!-)\blinked (?:to|with)\b", r"\blink between\b",
    r"\bobservational\b",
    r"\bcross-sectional\b", r"\bcohort\b", r"\bsurvey", r"\b(?:health|medical|patient|hospital) records\b",
    r"\bcomparison of\b", r"\bstatistics\b",
    r"\bregions? with\b", r"\bcities with\b", r"\bcounties\b", r"\bthose who\b", r"\bpeople who\b",
    r"\bstudents who\b", r"\bchildren who\b", r"\bchose for themselves\b", r"\bself-selected\b", r"\balso showed\b",
    "相关", "关联", "观察性", "横断面", "队列", "调查", "(?<!据)(?<!据最新)统计(显示|表明|发现|分析)",
    "(体检|病历|健康|医疗)记录", "同步上升", "同步增长", "自行决定", "自行选择",
    "的人[^，。]{0,20}(较低|较高|更低|更高)", "的县", "的城市[^，。]{0,10}(更|也)",
)
# An experiment: a causal conclusion may rest on it.
EXPERIMENTAL = (r"\brandomi[sz]ed\b", r"\bRCT\b", r"\bcontrolled trial\b", r"\bassigned to\b", "随机对照", "随机分配",
                "随机分组",
                # an intervention in a trial or a laboratory: a cause shown in its setting (its scope is the scope
                # rules' matter); without these, every knockout or drug-treatment abstract read as observational
                r"\bplacebo\b", r"\bdouble[- ]blind", r"\bphase (?:[1-4]|I{1,3}V?)\b", r"\bknock(?:out|-out|down|ed)\b",
                r"-deficient\b", r"\bnull mice\b", r"\bover-?express", r"\btransgenic\b", r"\bsi-?RNA\b", r"\bshRNA\b",
                r"\bCRISPR\b", r"\bmutants?\b", r"\btreated with\b", r"\badministration of\b", r"\binjected\b",
                r"\binhibitors?\b", r"\bpharmacological(?:ly)?\b", r"\btransfect", r"\bablation\b",
                "敲除", "过表达", "转基因", "安慰剂", "双盲", "给药")
# Established causal knowledge (a consensus, not one study): a causal statement is not an overclaim.
ESTABLISHED = (r"\bconsensus\b", r"\bestablished\b", r"\bwell[- ]established\b", "共识", "确立", "公认")
CAUSAL = (
    r"\bcaus(?:e|es|ed)\b", r"\bleads? to\b", r"\bled to\b", r"\bresults? in\b", r"\bprevents?\b", r"\breduces?\b",
    r"\blowers\b", r"\braised?\b", r"\braises\b", r"\bincreases?\b", r"\bdr(?:ove|ives)\b", r"\bboosts?\b",
    r"\bimproves?\b", r"\bcuts?\b", r"\badded\b", r"\bis the reason\b",
    "导致", "引起", "造成", "预防(?!性)", "能降低", "能够降低", "可以降低", "能提高", "可以提高", "使[^，。]{0,12}提高",
    "使[^，。]{0,12}降低", "的原因", "促进了", "带动了",
)
# A restricted scope of the evidence: the premise of a scope shift.
RESTRICTED = (
    r"\bin mice\b", r"\bmice\b", r"\brats?\b", r"\bin vitro\b", r"\bcell cultures?\b", r"\banimals?\b",
    r"\blaboratory conditions\b", r"\bcontrolled (?:laboratory )?conditions\b", r"\bonly (?:men|women)\b",
    r"\baged \d+ to \d+\b", r"\buniversity students\b", r"\bcollege students\b", r"\bvalidated on\b",
    r"\bcalibrated on\b", r"\bpilot\b", r"\b(?:a|the|our) sample of\b", r"\bsampled\b",
    "小鼠", "大鼠", "动物", "体外", "细胞实验", "实验室条件", "受控", "恒温", "仅纳入", "只纳入", "只在", "仅在",
    "本科生", "大学生", "校准", "抽样", "样本",
)
# A wider scope than the evidence: the conclusion of a scope shift.
WIDER = (
    # "human" as a population, not a specimen ("human cells", "human skin" are what a lab study used)
    r"\bhumans?\b(?! (?:cells?|cell lines?|tissues?|skin|samples?|serum|plasma|blood|fibroblasts|neurons|islets|"
    r"tumou?rs?|cancers?|genes?|genome|proteins?))", r"\bpeople\b", r"\bpatients\b",
    r"\bin any climate\b", r"\ball ages\b", r"\bboth sexes\b",
    r"\bmost adults\b", r"\beveryone\b", r"\bthe (?:whole )?country\b", r"\bworldwide\b", r"\bany climate\b",
    r"\bthe general population\b",
    "人类", "人体", "患者", "各种气候", "所有年龄", "男女", "全国", "大多数成年人", "想减肥的人", "所有人", "普通人群",
)
# A small or single piece of evidence: the premise of an overgeneralisation.
SMALL = (
    r"\bone study\b", r"\ba single\b", r"\bone season\b", r"\bsingle season\b", r"\b\d+ volunteers\b",
    r"\b(?:two|three|\d+) of the (?:\w+ )?\w+ (?:we )?(?:interviewed|surveyed|asked)\b", r"\bwe interviewed\b",
    r"\ba poll\b", r"\bpoll of\b", r"\bown test\b", r"\bin (?:the|one) (?:trial|test)\b",
    "一项针对", "一项研究", "一个生长季", "名志愿者", "访谈的", "民调", "厂商自己的测试", "自己的测试", "一次试验",
)
# Certainty or universality: the conclusion of an overgeneralisation.
UNIVERSAL = (
    r"\balways\b", r"\bnever\b", r"\bevery\b", r"\ball (?:years|soils|companies|cases|people)\b", r"\bin all\b",
    r"\bcertain(?:ly)? to\b", r"\bguarantee[sd]?\b", r"\bwill never\b", r"\bproves?\b",
    "一定", "必然", "永远", "所有企业", "所有的", "任何", "必定", "肯定会",
)
# A partial effect measured (reduced by 30%, 降低了30%): the premise of "a reduction reported as a cure".
PARTIAL = (
    r"\b(?:reduc|decreas|lower|improv|relie|alleviat|shorten)\w* (?:\w+ ){0,3}(?:by|of|to) (?:about |approximately |"
    r"nearly |around |roughly )?\d", r"\b\d+(?:\.\d+)?\s*(?:%|percent|per cent) (?:\w+ )?(?:lower|fewer|less|"
    r"reduction|decrease|drop|improvement)\b", r"\bpartial(?:ly)?\b", r"\bfell (?:by|from)\b",
    r"\b(?:narrow|retain|remov|cut|halv)\w* (?:\w+ ){0,4}(?:by )?(?:about |approximately |roughly |nearly )?\d",
    r"(?:降低|减少|下降|改善|缓解|减轻|缩短)了?(?:约|近|大约)?\d", "部分(?:缓解|改善|患者)", r"降至\d", "降幅",
    "有所(?:降低|减少|改善|缓解|下降)",
)
# A cure or complete elimination claimed (a rate's name, "cure rate", 治愈率, is a measure, not a claim).
COMPLETE = (
    r"\bcur(?:es|ed|ing|e)\b(?! rates?\b)", r"\beliminat(?:es|ed|e|ing)\b", r"\beradicat\w*", r"\bonce and for all\b",
    r"\bcompletely (?:prevents?|removes?|resolves?|reverses?|stops?)\b", r"\bfully (?:reverses?|restores?)\b",
    "治愈(?!率)", "根治", "痊愈", "根除", "彻底(?:消除|解决|治好|清除|消灭|摆脱)", "完全(?:消除|治愈|解决|恢复|消失)",
    "一劳永逸",
)
# A negation just before a cure word: "did not eliminate", 并未完全消除.
_NEGATED = re.compile(r"(?:\b(?:not|never|no|cannot|nor|without)\b|n't)(?:\s+\w+){0,2}\s*$"
                      r"|(?:未|不|没有|并非|无法|尚未)[\u4e00-\u9fff]{0,3}$", re.I)
# A conclusion drawn: what a carried-over premise needs in the later paragraph (a mention is not a conclusion).
CONCLUDING = (
    r"\btherefore\b", r"\bthus\b", r"\bhence\b", r"\bso\b", r"\bshows? that\b", r"\bproves?\b",
    r"\bmeans? that\b", r"\bwill\b", r"\bshould\b", r"\bas well\b", r"\bsame\b",
    "因此", "所以", "由此", "可见", "说明", "表明", "证明", "意味着", "同样", "也能", "将会", "应当", "应该",
)
# A hedge or a negation: a clause that holds one is not a conclusion.
HEDGE = (
    r"\bmay\b", r"\bmight\b", r"\bcould\b", r"\bnot known\b", r"\bunclear\b", r"\bdoes not show\b",
    r"\bdo not show\b", r"\bnot (?:yet )?(?:clear|proven|established)\b", r"\bwhether\b", r"\bbefore\b",
    r"\bneeded\b", r"\bunder way\b", r"\bto see\b", r"\bstill\b",
    "可能", "尚不", "并不能", "不能说明", "是否", "还需要", "有待", "正在", "以验证", "再决定", "另行",
)


def _any(patterns: Sequence[re.Pattern], text: str) -> re.Match | None:
    found = [m for p in patterns if (m := p.search(text))]
    return min(found, key=lambda m: (m.start(), -len(m.group(0)))) if found else None


@dataclass
class LogicIssue:
    """One logic finding: its kind, the span at issue in the paragraph, why, and the premise it rests on (with the
    index of the paragraph holding it, None = this one)."""

    kind: str  # one of LOGIC_KINDS
    keyword: str
    reason: str
    premise: str = ""
    premise_paragraph: int | None = None


@dataclass
class LogicRules:
    """The logic layer's cue-word rules (module docstring). Cue lists are regular expressions; the defaults are the
    module's constants, a config may replace any of them."""

    correlational: Sequence[str] = CORRELATIONAL
    experimental: Sequence[str] = EXPERIMENTAL
    established: Sequence[str] = ESTABLISHED
    causal: Sequence[str] = CAUSAL
    restricted: Sequence[str] = RESTRICTED
    wider: Sequence[str] = WIDER
    small: Sequence[str] = SMALL
    universal: Sequence[str] = UNIVERSAL
    hedge: Sequence[str] = HEDGE
    concluding: Sequence[str] = CONCLUDING
    partial: Sequence[str] = PARTIAL
    complete: Sequence[str] = COMPLETE
    _cues: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = ("correlational", "experimental", "established", "causal", "restricted", "wider", "small",
                 "universal", "hedge", "concluding", "partial", "complete")
        self._cues = {}
        for name in names:
            try:
                self._cues[name] = [re.compile(p, re.IGNORECASE) for p in getattr(self, name)]
            except re.error as exc:
                raise ValueError(f"conf/logic: {name}: bad regular expression ({exc})") from None

    def cue(self, name: str, text: str) -> re.Match | None:
        """The first match of cue list `name` in `text`."""
        return _any(self._cues[name], text)

    def check(self, paragraphs: Sequence[str]) -> list[list[LogicIssue]]:
        """Per paragraph of a document, its findings (each paragraph seen with every paragraph before it)."""
        return [self.check_paragraph(text, paragraphs[:index]) for index, text in enumerate(paragraphs)]

    def check_paragraph(self, paragraph: str, earlier: Sequence[str]) -> list[LogicIssue]:
        """The findings of one paragraph, given the paragraphs before it (at most one per kind; only the last of them
        holds premises)."""
        issues: dict[str, LogicIssue] = {}
        # premises: this paragraph's earlier clauses and the paragraph just before it (what a reader holds in mind)
        premises: list[tuple[str, int | None]] = [(earlier[-1], len(earlier) - 1)] if earlier else []
        for sentence in (m.group(0) for m in _SENTENCE.finditer(paragraph)):
            for clause in (m.group(0) for m in _CLAUSE.finditer(sentence)):
                if not self.cue("hedge", clause):
                    for issue in self._conclusion(clause, premises, sentence, paragraph):
                        issues.setdefault(issue.kind, issue)
                premises.append((clause, None))
        return list(issues.values())

    def _conclusion(self, clause: str, premises: list[tuple[str, int | None]], sentence: str,
                    paragraph: str = "") -> list[LogicIssue]:
        """The issues of one conclusion clause (in `sentence`, in `paragraph`) against the premises before it."""
        out = []
        # an experiment or a consensus stated anywhere in this paragraph (or the premises) clears a causal statement:
        # a study's design is a property of the study, whichever sentence names it ("Here we generated knockout mice")
        scope = " ".join(text for text, _ in premises) + " " + clause + " " + paragraph
        causal = self.cue("causal", clause)
        if (causal and not self.cue("correlational", clause) and not self.cue("experimental", scope)
                and not self.cue("established", scope)):
            premise = self._premise("correlational", premises)
            if premise:
                out.append(LogicIssue("causal_overclaim", causal.group(0),
                                      "a correlation is reported as a cause; no experiment is cited", *premise))
        wider = self.cue("wider", clause)
        if wider and not self.cue("restricted", clause):
            premise = self._premise("restricted", premises)
            if premise and premise[1] is not None and not self.cue("concluding", sentence):
                premise = None  # an earlier paragraph's scope is carried only by a conclusion drawn here
            if premise:
                kind = "scope_shift" if premise[1] is None else "carried_over"
                out.append(LogicIssue(kind, wider.group(0), "the result holds in a narrower scope than this "
                                      "conclusion states", *premise))
                return out
        complete = self.cue("complete", clause)
        if complete and _NEGATED.search(clause[:complete.start()]):
            complete = None  # "did not eliminate", 并未完全消除: the claim is the partial effect itself
        if complete and not self.cue("partial", clause):  # "reduced by 30% ... cures the disease"
            premise = self._premise("partial", premises)
            if premise:
                out.append(LogicIssue("overgeneralisation", complete.group(0),
                                      "a partial effect reported as a cure or a complete elimination", *premise))
                return out
        universal = self.cue("universal", clause)
        if universal and not self.cue("small", clause):
            premise = self._premise("small", premises)
            if premise:
                out.append(LogicIssue("overgeneralisation", universal.group(0),
                                      "a conclusion wider than its evidence (one small study or test)", *premise))
        return out

    def _premise(self, name: str, premises: list[tuple[str, int | None]]) -> tuple[str, int | None] | None:
        """(the premise span, its paragraph index or None for this paragraph): the nearest premise with cue `name`."""
        for text, index in reversed(premises):
            match = self.cue(name, text)
            if match:
                return match.group(0), index
        return None
