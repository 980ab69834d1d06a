"""Deterministic consistency checks between a claim and one evidence snippet: numbers, units, percentages,
dates / years and (English) named entities.

A fact-checker's most frequent "precisely wrong" statement keeps the sentence and changes one value: 1928 -> 1938,
45% -> 54%, 5 mg -> 5 g, Fleming -> Florey. A small classifier is unsure on exactly these pairs (they look alike), so
the fast checker compares the values themselves and feeds the result to the rules as a signal:

- a *clear* mismatch: the snippet is about the same thing (most of the claim's other content words are in it), it
  states values of the same kind as the claim (years, percentages, a unit), and none of the claim's values of that kind;
  or it states the claim's number with another unit of the same dimension;
- at a source tier <= `max_tier` (default 1) a clear numeric, percentage, date or unit mismatch becomes a
  `contradict` judgment (confidence `CONFIDENCE`) even when the classifier said support or was unsure; at a lower tier
  it is a hint for the reviewer;
- a named-entity mismatch (English capitalised names only) is always a hint, never a label: names have synonyms and
  abbreviations a rule cannot see.

Everything here is text in, values out: the snippet's words are compared, never followed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from factlab.matching.text import content_containment
from factlab.schema import Judgment

CONFIDENCE = 0.9  # the confidence of a contradiction found by a rule: above every business's contradict_min_confidence
_UNITS = {  # unit spelling -> (dimension, canonical unit)
    **{u: ("percent", "%") for u in ("%", "percent", "per cent", "百分之")},
    **{u: ("mass", u) for u in ("mg", "g", "kg", "μg", "µg", "mcg", "t")},
    **{"毫克": ("mass", "mg"), "克": ("mass", "g"), "千克": ("mass", "kg"), "公斤": ("mass", "kg"),
       "吨": ("mass", "t")},
    **{u: ("length", u) for u in ("mm", "cm", "m", "km", "nm", "μm")},
    **{"毫米": ("length", "mm"), "厘米": ("length", "cm"), "米": ("length", "m"), "公里": ("length", "km"),
       "千米": ("length", "km")},
    **{u: ("volume", u) for u in ("ml", "l")}, "毫升": ("volume", "ml"), "升": ("volume", "l"),
    **{u: ("scale", u) for u in ("thousand", "million", "billion", "trillion")},
    "万": ("scale", "万"), "亿": ("scale", "亿"), "千": ("scale", "thousand"), "百万": ("scale", "million"),
    **{u: ("time", u.rstrip("s")) for u in ("years", "year", "months", "month", "days", "day", "hours", "hour",
                                              "weeks", "week")},
    "岁": ("time", "year"), "个月": ("time", "month"), "天": ("time", "day"), "小时": ("time", "hour"),
    "周": ("time", "week"),
    "℃": ("temperature", "°c"), "°c": ("temperature", "°c"), "°f": ("temperature", "°f"),
    "倍": ("ratio", "倍"), "fold": ("ratio", "倍"),
}
_UNIT_PATTERN = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUMBER = r"\d{1,3}(?:[,\u202f\u2009 ]\d{3})+(?![\d.])|\d+(?:\.\d+)?"  # thousands separated, or plain
_QUANTITY = re.compile(rf"(?<![A-Za-z0-9.])({_NUMBER})(?:\s*({_UNIT_PATTERN})(?![a-z]))?", re.IGNORECASE)
_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)$")
_NAME = re.compile(r"(?<![\w])([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)")
_NAME_STOP = frozenset("The A An In On At Of For By With From And But Or This That These Those It Its They Their We "
                       "Our He She His Her After Before During Since When While Although However According".split())
NUMERIC_KINDS = ("year", "percent", "quantity", "unit")


@dataclass(frozen=True)
class Quantity:
    """A value a text states: its number (thousands separators dropped), kind and unit."""

    value: str
    kind: str  # year | percent | mass | length | volume | scale | time | temperature | ratio | number
    unit: str = ""


@dataclass(frozen=True)
class Mismatch:
    """Why a snippet disagrees with the claim on a value: `kind` is one of NUMERIC_KINDS or "entity"."""

    kind: str
    claim: tuple[str, ...]
    evidence: tuple[str, ...]

    @property
    def numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS

    def __str__(self) -> str:
        what = {"year": "year", "percent": "percentage", "quantity": "number", "unit": "unit",
                "entity": "name"}[self.kind]
        return f"{what} differs: the claim says {', '.join(self.claim)}, the source says {', '.join(self.evidence)}"


def quantities(text: str) -> list[Quantity]:
    """The values a text states, with their kind.

    >>> [(q.value, q.kind, q.unit) for q in quantities("In 2019, 45% of 3,000 patients took 5 mg.")]
    [('2019', 'year', ''), ('45', 'percent', '%'), ('3000', 'number', ''), ('5', 'mass', 'mg')]
    >>> [(q.value, q.kind) for q in quantities("青霉素于1928年被发现，有效率为百分之八十或80%。")]
    [('1928', 'year'), ('80', 'percent')]
    >>> [q.value for q in quantities("c = 299 792 458 m/s, 1/299,792,458 of a second, in 2019 300 people")]
    ['299792458', '1', '299792458', '2019', '300']
    """
    text = unicodedata.normalize("NFKC", text)
    out = []
    for match in _QUANTITY.finditer(text):
        value, unit = re.sub(r"[,\u202f\u2009 ]", "", match.group(1)), (match.group(2) or "").lower()
        if unit in ("", "年") and _YEAR.match(value):
            out.append(Quantity(value, "year"))
        elif unit in _UNITS:
            kind, canonical = _UNITS[unit]
            out.append(Quantity(value, kind, canonical))
        else:
            out.append(Quantity(value, "number"))
    return out


def _strip_numbers(text: str) -> str:
    return _QUANTITY.sub(" ", unicodedata.normalize("NFKC", text))


def _names(text: str) -> set[str]:
    """Capitalised names of an English text, sentence-initial function words left out."""
    return {m for m in _NAME.findall(text) if m.split()[0] not in _NAME_STOP}


def mismatch(claim: str, evidence: str, min_overlap: float = 0.6) -> Mismatch | None:
    """The clear value mismatch between a claim and a snippet about the same thing, or None.

    >>> str(mismatch("Penicillin was discovered by Fleming in 1938.", "Fleming discovered penicillin in 1928."))
    'year differs: the claim says 1938, the source says 1928'
    >>> mismatch("Penicillin was discovered by Fleming in 1928.", "Fleming discovered penicillin in 1928.") is None
    True
    >>> str(mismatch("The trial enrolled 5 mg doses daily.", "The trial enrolled 5 g doses daily."))
    'unit differs: the claim says 5 mg, the source says 5 g'
    >>> mismatch("Aspirin was first sold in 1899.", "The Eiffel Tower opened in 1889.") is None  # another topic
    True
    >>> str(mismatch("阿司匹林使心脏病风险降低了45%。", "研究表明，阿司匹林使心脏病风险降低了25%。"))
    'percentage differs: the claim says 45%, the source says 25%'
    """
    if content_containment(_strip_numbers(claim), _strip_numbers(evidence)) < min_overlap:
        return None
    stated, found = quantities(claim), quantities(evidence)
    found_values = {q.value for q in found}
    for q in stated:  # the claim's number with another unit of the same dimension, and never with its own
        if not q.unit or q.kind == "percent":
            continue
        same = [f for f in found if f.value == q.value and f.kind == q.kind]
        if same and all(f.unit != q.unit for f in same):
            return Mismatch("unit", (f"{q.value} {q.unit}",), tuple(sorted({f"{f.value} {f.unit}" for f in same})))
    for kind in dict.fromkeys(q.kind for q in stated):
        mine = {q.value for q in stated if q.kind == kind}
        theirs = {q.value for q in found if q.kind == kind}
        if theirs and not mine & found_values:
            label = {"year": "year", "percent": "percent"}.get(kind, "quantity")
            unit = "%" if kind == "percent" else ""
            return Mismatch(label, tuple(f"{v}{unit}" for v in sorted(mine)),
                            tuple(f"{v}{unit}" for v in sorted(theirs)))
    return _name_mismatch(claim, evidence)


def _name_mismatch(claim: str, evidence: str) -> Mismatch | None:
    """An English claim naming someone the snippet does not, where the snippet names someone else."""
    mine, theirs = _names(claim), _names(evidence)
    lowered = evidence.lower()
    missing = sorted(n for n in mine if n.lower() not in lowered)
    other = sorted(n for n in theirs if n.lower() not in claim.lower())
    if missing and other:
        return Mismatch("entity", tuple(missing), tuple(other))
    return None


def apply(claim: str, evidence: Sequence, judgments: Sequence[Judgment], max_tier: int = 1,
          min_overlap: float = 0.6) -> tuple[list[Judgment], list[str]]:
    """The judgments with the consistency signal applied, and the hints it adds.

    Args:
        claim: the claim's text.
        evidence: the snippets (`factlab.schema.Evidence`: `.text`, `.tier`, `.chunk_id`), in the judgments' order.
        judgments: the judge's verdict per snippet.
        max_tier: a clear numeric / date / unit mismatch with a snippet at this tier or better is a contradiction;
            0 = the signal only adds hints.
        min_overlap: share of the claim's content words (values left out) the snippet must hold to be about the
            same thing.
    """
    out, hints = [], []
    for item, judgment in zip(evidence, judgments, strict=False):
        found = mismatch(claim, item.text, min_overlap)
        if found is None:
            out.append(judgment)
            continue
        where = f"{item.chunk_id} (tier {item.tier})"
        if found.numeric and item.tier <= max_tier and judgment.relation != "contradict":
            out.append(Judgment("contradict", CONFIDENCE, f"consistency check: {found}"))
            hints.append(f"{found} ({where}); judged contradict by the consistency check "
                         f"(the model said {judgment.relation} at {judgment.confidence:.2f})")
            continue
        out.append(judgment)
        hints.append(f"{found} ({where}): check this value by hand")
    return out + list(judgments[len(out):]), hints
