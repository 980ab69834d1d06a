"""Synthetic contrastive pairs: from a claim its evidence supports, deterministic edits that mirror the error types a
fact-checker exists to catch, each with the relation the edit implies (English and Chinese).

| family | edit | relation |
|---|---|---|
| number | a number the evidence states is changed (a year by 1-10, others by a factor or a step) | contradict |
| unit | a unit is swapped for another of its kind (km -> m, mg -> g, 千米 -> 米) | contradict |
| negation | the claim is negated (not / never; 不 / 没有) | contradict |
| entity | a name in the claim is swapped for another name of the same evidence | contradict |
| qualifier_added | an effect claim is made universal (always; 在所有人群中) | partial_support |
| qualifier_dropped | a scope the evidence states is dropped (in mice, 在小鼠中) | partial_support |

Every edit is checked to change the claim and to keep it well formed; an edit that does not apply is skipped, so a
pair yields 0-6 new pairs. `contrastive_cases` turns support pairs of cases into new cases in the case schema.

>>> [(e.family, e.claim) for e in edits("Fleming discovered penicillin in 1928.", "In 1928 Fleming found penicillin.")]
[('number', 'Fleming discovered penicillin in 1920.'), ('negation', 'Fleming did not discover penicillin in 1928.')]
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from factlab.schema import detect_language, normalise_text

FAMILIES: tuple[str, ...] = ("number", "unit", "negation", "entity", "qualifier_added", "qualifier_dropped")
RELATION_OF: dict[str, str] = {"number": "contradict", "unit": "contradict", "negation": "contradict",
                               "entity": "contradict", "qualifier_added": "partial_support",
                               "qualifier_dropped": "partial_support"}
LABEL_OF = {"contradict": "wrong", "partial_support": "disputed"}
# The seed error type each family stands for (factlab.data.cases.ERROR_TYPES); negation has none of its own.
ERROR_TYPE_OF = {"number": "invented_statistic", "unit": "invented_statistic", "entity": "citation_splicing",
                 "qualifier_added": "extrapolation", "qualifier_dropped": "dropped_qualifier"}

_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w])")
_ZH_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")
_UNITS = [("km", "m"), ("kilometres", "metres"), ("kilometers", "meters"), ("mg", "g"), ("kg", "g"),
          ("million", "billion"), ("hours", "minutes"), ("days", "weeks"), ("percent", "percentage points")]
_ZH_UNITS = [("千米", "米"), ("公里", "米"), ("毫克", "克"), ("千克", "克"), ("万", "亿"),
             ("小时", "分钟"), ("天", "周")]
_AUXILIARIES = re.compile(r"\b(is|are|was|were|has|have|had|can|will|does|do|did|could|would|should|may)\b")
_PAST_VERB = re.compile(r"\b([a-z]{3,}ed)\b")
_ZH_NEGATABLE = re.compile(r"(是|有|会|能|可以|增加|减少|降低|提高|发现|导致|支持|超过|达到)")
_EFFECT_EN = re.compile(r"\b(reduce[sd]?|increase[sd]?|lower(?:s|ed)?|raise[sd]?|improve[sd]?|cause[sd]?|"
                        r"prevent(?:s|ed)?|protect(?:s|ed)?|cure[sd]?|treat(?:s|ed)?|cut(?:s)?)\b")
_EFFECT_ZH = re.compile(r"(降低|提高|减少|增加|导致|预防|治疗|改善|缓解)")
_NAME = re.compile(r"\b([A-Z][a-z]{2,}(?:\s+[A-Z][a-z]{2,})*)\b")
_SCOPE_EN = re.compile(r"\s*,?\s*\b(in mice|in rats|in vitro|in animals|in children|in adults(?: over \d+)?|"
                       r"under controlled conditions|in (?:a|the) (?:pilot|small) (?:study|trial)|"
                       r"in (?:a|the) laboratory)\b", re.I)
_SCOPE_ZH = re.compile(r"(在小鼠(?:实验)?中|在大鼠(?:实验)?中|在体外实验中|在动物实验中|在儿童中|"
                       r"在受控条件下|在实验室条件下|在小规模试验中)")


@dataclass(frozen=True)
class Edit:
    """One edited claim and what it now is to the evidence."""

    family: str
    claim: str
    relation: str


def _changed_number(value: str, seed: str) -> str:
    """Another number, deterministic in (value, seed): years move by 1-10, others by a step or a factor.

    >>> _changed_number("1928", "x") != "1928", _changed_number("4.2", "x") != "4.2"
    (True, True)
    """
    step = 1 + int(hashlib.sha256(f"{seed}|{value}".encode()).hexdigest(), 16) % 9
    plain = value.replace(",", "")
    if "." in plain:
        decimals = len(plain.split(".")[1])
        new = f"{float(plain) * (1 + step / 10):.{decimals}f}"
    elif len(plain) == 4 and 1500 <= int(plain) <= 2099:
        new = str(int(plain) + (step if step % 2 else -step))
    elif int(plain) < 10:
        new = str(int(plain) + step)
    else:
        new = str(int(plain) * (step + 1))
    return f"{int(float(new)):,}" if "," in value and "." not in new else new


def edits(claim: str, evidence: str) -> list[Edit]:
    """Every applicable contrastive edit of a claim its evidence supports (at most one per family)."""
    zh = detect_language(claim) == "zh"
    out = [_number_edit(claim, evidence, zh), _unit_edit(claim, zh), _negation_edit(claim, zh),
           _entity_edit(claim, evidence) if not zh else None, _qualifier_added(claim, zh),
           _qualifier_dropped(claim, evidence, zh)]
    kept = []
    for family, edited in zip(FAMILIES, out, strict=True):
        if edited and normalise_text(edited) != normalise_text(claim):
            kept.append(Edit(family, edited, RELATION_OF[family]))
    return kept


def _number_edit(claim: str, evidence: str, zh: bool) -> str | None:
    pattern = _ZH_NUMBER if zh else _NUMBER
    for match in pattern.finditer(claim):
        value = match.group(1)
        if value.replace(",", "") in evidence.replace(",", ""):
            return claim[:match.start(1)] + _changed_number(value, claim) + claim[match.end(1):]
    return None


def _unit_edit(claim: str, zh: bool) -> str | None:
    for a, b in _ZH_UNITS if zh else _UNITS:
        for old, new in ((a, b), (b, a)):
            pattern = re.escape(old) if zh else rf"\b{re.escape(old)}\b"
            if re.search(pattern, claim):
                return re.sub(pattern, new, claim, count=1)
    return None


def _negation_edit(claim: str, zh: bool) -> str | None:
    if zh:
        if re.search(r"不|没有|未|无", claim):
            return None
        match = _ZH_NEGATABLE.search(claim)
        if not match:
            return None
        negation = "没有" if match.group(1) not in ("是", "会", "能", "可以") else "不"
        rest = claim[match.start():]
        if negation == "没有":  # 没有 + verb takes no 了: 没有降低了10% -> 没有降低10%
            rest = rest[:len(match.group(1))] + rest[len(match.group(1)):].removeprefix("了")
        return claim[:match.start()] + negation + rest
    if re.search(r"\b(not|never|no)\b|n't", claim, re.I):
        return None
    match = _AUXILIARIES.search(claim)
    if match:
        return claim[:match.end()] + " not" + claim[match.end():]
    verb = _PAST_VERB.search(claim)
    if verb:  # "discovered" -> "did not discover"
        word = verb.group(1)
        base = word[:-1] if word.endswith(("ored", "ated", "ured", "ized", "ised", "aced", "uced")) else word[:-2]
        return claim[:verb.start()] + f"did not {base}" + claim[verb.end():]
    return None


def _entity_edit(claim: str, evidence: str) -> str | None:
    claim_names = [m.group(1) for m in _NAME.finditer(claim) if m.start() > 0]
    others = [m.group(1) for m in _NAME.finditer(evidence)]
    for name in claim_names:
        for other in others:
            if other != name and other not in claim and name not in other and other not in name:
                return claim.replace(name, other, 1)
    return None


def _qualifier_added(claim: str, zh: bool) -> str | None:
    """An effect claim made universal: the evidence supports the effect, not that it always holds."""
    if zh:
        if re.search(r"所有|全部|总是|一律", claim) or not _EFFECT_ZH.search(claim) or claim.startswith("在"):
            return None
        return "在所有人群中，" + claim
    if re.search(r"\b(all|every|always|never)\b", claim, re.I):
        return None
    match = _EFFECT_EN.search(claim)
    return None if match is None else claim[:match.start()] + "always " + claim[match.start():]


def _qualifier_dropped(claim: str, evidence: str, zh: bool) -> str | None:
    pattern = _SCOPE_ZH if zh else _SCOPE_EN
    match = pattern.search(claim)
    if not match or not pattern.search(evidence):
        return None
    edited = (claim[:match.start()] + claim[match.end():]).strip()
    edited = re.sub(r"\s{2,}", " ", edited).replace(" .", ".").replace("，，", "，").lstrip("，,")
    return edited or None


def contrastive_cases(cases: Iterable[dict], families: Iterable[str] = FAMILIES,
                      source: str = "contrastive") -> list[dict]:
    """New cases (case schema, split train) from every claim-evidence pair whose relation is `support`: one case
    per applicable edit, with the edited claim, the same evidence, and the edit's relation and label.

    Args:
        cases: the cases to draw support pairs from (pass train-split cases only: the edits never reach val / test).
        families: the edit families to apply (ablations drop some).
        source: the case id prefix.
    """
    wanted = set(families)
    unknown = wanted - set(FAMILIES)
    if unknown:
        raise ValueError(f"contrastive families {sorted(unknown)}: expected some of {', '.join(FAMILIES)}")
    out = []
    for case in cases:
        for claim in case.get("claims", []):
            for index, item in enumerate(claim.get("evidence", [])):
                if (item.get("relation") or claim.get("relation")) != "support":
                    continue
                for edit in edits(claim["text"], item["text"]):
                    if edit.family not in wanted:
                        continue
                    evidence = {k: v for k, v in item.items() if k != "relation"}
                    out.append({
                        "case_id": f"{source}-{edit.family}-{case['case_id']}-{claim.get('claim_id', 'c')}-{index}",
                        "lang": case["lang"], "text": edit.claim, "split": "train",
                        "sources": [s for s in case.get("sources", []) if s["source_id"] == item["source_id"]],
                        "claims": [{"claim_id": "c1", "text": edit.claim, "relation": edit.relation,
                                    "label": LABEL_OF[edit.relation],
                                    **({"error_type": ERROR_TYPE_OF[edit.family]} if edit.family in ERROR_TYPE_OF
                                       else {}),
                                    "evidence": [{**evidence, "relation": edit.relation}]}],
                    })
    return out
