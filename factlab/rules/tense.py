"""A claim's time: whether a claim speaks about what is current, the past, or a dated moment; text in, values out.

**A claim's time** (`claim_tense`, `is_current_claim`): `current` when it has a current cue (the current guideline,
currently, now, today, the latest, in force, still, as of <date>; 现行, 目前, 当前, 现在, 最新, 仍, 截至...), else
`past` on a past marker (previously, formerly, used to, under the old code; 曾, 此前, 过去, 旧版, 原《…》...), else
`dated` when it is anchored at a year ("In 2019 the guideline recommended", "the 2019 edition", "2019年，..."), else
`unmarked`. A current cue wins over a past marker. "as of <date>" / "截至<date>", "in <year>" ("In 2019 the guideline
still recommended", but not "issued in 2023", which dates a document) and a dated claim's year bound the sources that
can speak for the claim: a source dated after the bound says nothing about it ("As of 2022, the cap is 1.2 g" is not
refuted by a 2024 change).

The cues are configurable (`TenseCues`, conf/timeliness/*.yaml `current_cues` / `past_cues`); the dates are read by
factlab/rules/dating.py, and the timeliness rule that uses a claim's time is factlab/rules/timeliness.py.

>>> claim_tense("现行《云岫省饮用水卫生条例》规定限值为每升50毫克。").kind, is_current_claim("此前票价为2元。")
('current', False)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from factlab.rules.dating import DATE_RE, STATUS_PATTERNS, YEAR_RE, Date, parse_date

TENSES = ("current", "past", "dated", "unmarked")

CURRENT_CUES: dict[str, list[str]] = {
    "en": [r"\bcurrent(?:ly)?\b(?!\s+(?:account|assets?|liabilit|density|flow|ratio|affairs|events))",
           r"\bas (?:of|at)\b", r"\bnow\b", r"\bnowadays\b", r"\btoday(?:'s)?\b", r"(?<!\bat )\bthe latest\b",
           r"\bin (?:force|effect)\b", r"\bstill\b", r"\bat present\b", r"\bpresently\b", r"\bto date\b",
           r"\bno longer\b", r"\bup[- ]to[- ]date\b"],
    "zh": ["现行", "目前", "当前", "(?<![出发实体表呈展再])现(?:在|已|为)", "最新", "仍", "依然", "至今", "迄今",
           "截至", "截止", "如今", "现今", "当下", "现阶段"],
}
PAST_CUES: dict[str, list[str]] = {
    "en": [r"\bpreviously\b", r"\bformerly\b", r"\bused to\b", r"\boriginally\b", r"\bat the time\b",
           r"\bback then\b", r"\bin the past\b",
           r"\b(?:under|in|by)\s+the\s+(?:old|former|previous|earlier|superseded|repealed|outdated)\b",
           r"\buntil\s+(?:recently|(?:1[89]|20)\d\d)\b", r"\bbefore\s+(?:1[89]|20)\d\d\b"],
    "zh": ["曾", "此前", "过去", "早前", "以往", "旧版", "原先", "原来", "原本", "当时", "彼时", "已废止",
           "(?:已被|被).{0,15}(?:取代|替代|废止)", "原(?=[《“「]|规定|标准|条例|办法|版|指南|政策|方案|计划|规则)"],
}
# A year the claim is about when it has no current cue: "In 2019 the guideline recommended", "the 2019 edition",
# "2019年，...". Not "since 2020" / "自2023年起" (a state that still holds) nor "of 2016" (a law's name).
_ANCHORS = (
    re.compile(rf"\b(?:in|during|for|at the end of|by the end of|end[- ])\s*(?:(?:early|late|mid)[- ]?)?"
               rf"(?P<d>{DATE_RE})", re.IGNORECASE),
    re.compile(rf"\b(?P<d>{YEAR_RE})\s+(?:edition|version|update|revision|guidelines?|code|rules?|report|schedule|"
               rf"plan|standard|list|budget|figures?)\b", re.IGNORECASE),
    re.compile(rf"(?<![自从\d])(?P<d>{YEAR_RE}\s*年(?:\s*\d{{1,2}}\s*月(?:\s*\d{{1,2}}\s*[日号])?)?)"
               rf"(?!\s*(?:起|以来|开始|至今|后))"),
)
# "issued in 2023" dates a document the claim names, not the time the claim is about.
_EVENT_VERB = re.compile(r"\b(?:issued|published|revised|amended|adopted|updated|released|enacted|passed|introduced|"
                         r"approved|signed|founded|established)\s+(?:on\s+)?$", re.IGNORECASE)


def _anchor(claim: str, patterns: Sequence[re.Pattern]) -> tuple[str, Date] | None:
    """The first year / date the claim is anchored at (cue text, date), None without one."""
    for pattern in patterns:
        for m in pattern.finditer(claim):
            if pattern is _ANCHORS[0] and _EVENT_VERB.search(claim[:m.start()]):
                continue
            if (date := parse_date(m["d"])) is not None:
                return m[0].strip(), date
    return None


@dataclass(frozen=True)
class ClaimTense:
    """What time a claim is about: `kind` (current / past / dated / unmarked), the `cue` that decided it, and the
    date bound (`as_of`) beyond which a source cannot speak for it (as of <date>, 截至<date>, a dated claim's year)."""

    kind: str
    cue: str = ""
    as_of: Date | None = None


@dataclass(frozen=True)
class TenseCues:
    """The compiled current and past cues that decide a claim's time (`compile` them from config lists).

    >>> TenseCues.compile({"en": [r"\\bnow\\b"]}, {"en": [r"\\bonce\\b"]}).tense("It once cost 2 euros.").kind
    'past'
    """

    current: tuple[re.Pattern, ...]
    past: tuple[re.Pattern, ...]

    @classmethod
    def compile(cls, current: Mapping[str, Sequence[str]], past: Mapping[str, Sequence[str]],
                where: str = "timeliness") -> TenseCues:
        """Compile the cue lists (language -> regular expressions, case-insensitive).

        Args:
            current: the current cues per language.
            past: the past cues per language.
            where: the config an error names.

        Raises:
            ValueError: a cue list is not a list, or a cue is not a regular expression.
        """
        compiled = {}
        for name, cues in (("current_cues", current), ("past_cues", past)):
            patterns = []
            for lang, items in dict(cues).items():
                if isinstance(items, str) or not isinstance(items, Sequence):
                    raise ValueError(f"{where}: {name}.{lang} must be a list of regular expressions, got {items!r}")
                for i, cue in enumerate(items):
                    try:
                        patterns.append(re.compile(str(cue), re.IGNORECASE))
                    except re.error as exc:
                        raise ValueError(f"{where}: {name}.{lang}[{i}] {cue!r} is not a regular expression ({exc})"
                                         ) from None
            compiled[name] = tuple(patterns)
        return cls(compiled["current_cues"], compiled["past_cues"])

    def tense(self, claim: str) -> ClaimTense:
        """The claim's time: a current cue first, then a past one, then a year it is anchored at (module doc)."""
        for pattern in self.current:
            if m := pattern.search(claim):
                bound = next((d for p in STATUS_PATTERNS if (s := p.search(claim)) and (d := parse_date(s["d"]))), None)
                if bound is None and (anchored := _anchor(claim, _ANCHORS[:1])):  # "In 2019 ... still ..."
                    bound = anchored[1]
                return ClaimTense("current", m[0], bound)
        for pattern in self.past:
            if m := pattern.search(claim):
                return ClaimTense("past", m[0])
        if anchored := _anchor(claim, _ANCHORS):
            return ClaimTense("dated", *anchored)
        return ClaimTense("unmarked")


_DEFAULT_CUES = TenseCues.compile(CURRENT_CUES, PAST_CUES)


def claim_tense(claim: str) -> ClaimTense:
    """The time a claim is about, with the default cues (conf/timeliness/default.yaml holds the same lists).

    >>> claim_tense("As of 2022, the sodium cap is 1.2 g.")
    ClaimTense(kind='current', cue='As of', as_of=(2022, None, None))
    >>> claim_tense("In 2019 the guideline recommended a target below 140/90 mmHg.")
    ClaimTense(kind='dated', cue='In 2019', as_of=(2019, None, None))
    >>> claim_tense("原《霁川市养犬管理办法》规定每户限养一只犬。").kind, claim_tense("The code caps it at 5 mg.").kind
    ('past', 'unmarked')
    """
    return _DEFAULT_CUES.tense(claim)


def is_current_claim(claim: str) -> bool:
    """True when the claim says it is about what is current (see `claim_tense` for the cue that matched).

    >>> is_current_claim("The current guideline recommends X."), is_current_claim("目前起步价为10元。")
    (True, True)
    >>> is_current_claim("Brannock used to require a permit."), is_current_claim("该现象出现在2019年。")
    (False, False)
    """
    return claim_tense(claim).kind == "current"
