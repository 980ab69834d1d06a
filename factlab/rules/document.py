"""The document consistency layer, deterministic: what must stay uniform through a whole document, checked across
its paragraphs, each finding with both locations and a suggested action.

- `abbreviation`: one abbreviation defined two ways ("RCT (randomised controlled trial)" ... "RCT (real-time
  cardiac telemetry)"), or a term given two abbreviations.
- `unit_format`: one unit written two ways (mg and 毫克, km and 公里, % and 百分比 / per cent).
- `unit_mismatch`: one number stated in two units of one dimension (850 °C and 850 K; 86.5 公里 and 86.5 英里), from
  parsed quantities (`quantities`), not phrase lists.
- `outdated_value`: a value stated as current (currently, 现行) that a change stated elsewhere in the document replaced
  ("lowered ... to 5 µg/m³", 下调为每亩30元).
- `number_restated`: one figure restated with its digits transposed (1,860 and 1,680 particles; 94.2% and 92.4%);
  statistics (95% CI 1.13 to 1.31, HR 1.24, 32.7 +/- 4) are not figures restated.
- `restated_value` (not on by default: docs/layers.md has why): one count restated with another value for the same
  thing (18,426 participants ... 16,842 participants), the two mentions tied by the words around them.
- `percent_points`: a change between percentages stated in % in one place and in percentage points in another (or
  "% points" misused: "rose by 5%" of a rate that is itself a percentage is ambiguous, flagged once per document).
- `number_format`: thousands written with and without separators (12,000 vs 12000), or decimal commas mixed with
  decimal points.
- `citation_format`: author-year citations ("Smith et al. (2019)", "(Smith, 2019)") mixed with numbered ones
  ("[3]"), or two author-year styles mixed.

Every finding names the `keyword` (the span at issue), the paragraph it is in, the other location (`other`), and
what to do. Paragraph texts are untrusted: they are only matched, never executed or sent anywhere.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from factlab.matching.segment import sentence_spans
from factlab.matching.text import content_containment

KINDS = ("abbreviation", "unit_format", "unit_mismatch", "outdated_value", "number_restated", "percent_points",
         "number_format", "citation_format", "restated_value", "term_drift")
# what runs unless a config names the kinds (conf/pipeline/default.yaml document_checks); restated_value is measured
# and left off: on scripted edits of public abstracts it finds a few of the restated counts at the cost of false
# alarms on subgroup counts (134 infants ... 136 infants in two studies), docs/layers.md
OPT_IN = ("restated_value",)  # built and measured, off unless a config names it (docs/layers.md)
DEFAULT_KINDS = tuple(kind for kind in KINDS if kind not in OPT_IN)


@dataclass(frozen=True)
class Location:
    paragraph_id: str
    start: int  # character offsets inside the paragraph's text
    end: int
    text: str  # the matched span


@dataclass
class Finding:
    """One consistency problem: where, what, the other place that disagrees, and the action."""

    kind: str  # one of KINDS
    paragraph_id: str  # where the reader should look first (the later location)
    keyword: str  # the span at issue
    other: Location  # the location it disagrees with
    at: Location
    message: str
    suggested_action: str
    details: dict = field(default_factory=dict)


# a definition is "words (ABBR)" or "ABBR (words)" with a space before the bracket: "FE(NO)" is notation
_ABBREV_EN = re.compile(r"\b([A-Za-z][A-Za-z\- ]{3,80}?)\s+\(([A-Z][A-Za-z0-9]{1,9})\)")
_ABBREV_EN_REV = re.compile(r"\b([A-Z][A-Za-z0-9]{1,9})\s+\(([A-Za-z][A-Za-z\- ]{3,80}?)\)")
_ABBREV_ZH = re.compile(r"([\u4e00-\u9fff]{2,20})[（(]([A-Z][A-Za-z0-9]{1,9})[)）]")
# the other Chinese order: the abbreviation, then its expansion in brackets (TFP（全要素生产率）); a CJK character in it
_ABBREV_ZH_REV = re.compile(r"(?<![A-Za-z0-9])([A-Z][A-Za-z0-9]{1,9})"
                            r"[（(]([A-Za-z]{0,12}[\u4e00-\u9fff][\u4e00-\u9fffA-Za-z]{1,19})[)）]")

# unit -> its family (spellings of one unit); two spellings of one family in one document are a finding
_UNIT_FAMILIES: dict[str, tuple[str, ...]] = {
    "milligram": ("mg", "毫克"), "gram": ("g", "克"), "kilogram": ("kg", "公斤", "千克"),
    "kilometre": ("km", "公里", "千米"), "metre": ("m", "米"), "millilitre": ("ml", "mL", "毫升"),
    "percent": ("%", "％", "per cent", "percent", "百分之"),
}
_NUMBER_UNIT = re.compile(r"(?<![\dA-Za-z.])(\d+(?:[.,]\d+)?)\s*"
                          r"(mg|毫克|kg|公斤|千克|km|公里|千米|ml|mL|毫升|g|克|m|米|%|％|per cent|percent)(?![A-Za-z])")
_ZH_PERCENT = re.compile(r"百分之[零一二三四五六七八九十百\d]+")
_POINTS = re.compile(r"(\d+(?:\.\d+)?)\s*(percentage points?|个百分点|pp\b)", re.I)
_PERCENT_CHANGE = re.compile(r"(rose|fell|increased|decreased|grew|dropped|上升|下降|提高|降低|增加|减少)"
                             r"[^.。;；]{0,12}?(?:by\s*)?(\d+(?:\.\d+)?)\s*(%|％)")
_RATE = re.compile(r"(率|占比|比重|比例|\brates?\b|\bshare\b|\bproportion\b|\bcoverage\b|\bprevalence\b|"
                   r"\buptake\b)", re.I)  # a quantity that is itself a percentage
_THOUSANDS_SEP = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d])")
# a run of digits glued to letters is an identifier (rs599839, NCT00464204, AB290155), not a count
_THOUSANDS_PLAIN = re.compile(r"(?<![\d.,A-Za-z])\d{5,}(?![\d.,])")
_CITE_AUTHOR_YEAR_PAREN = re.compile(r"\(([A-Z][A-Za-z\-]+)(?: et al\.)?,? (\d{4})\)")
_CITE_AUTHOR_THEN_YEAR = re.compile(r"\b([A-Z][A-Za-z\-]+)(?: et al\.)? \((\d{4})\)")
_CITE_NUMBERED = re.compile(r"\[(\d+(?:[,–-]\s*\d+)*)\]")
_YEARISH = re.compile(r"^(1[5-9]|20)\d\d$")


def _loc(paragraph_id: str, match: re.Match, group: int = 0) -> Location:
    return Location(paragraph_id, match.start(group), match.end(group), match.group(group))


def abbreviations(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """An abbreviation defined two ways, or a term given two abbreviations.

    >>> found = abbreviations([("p1", "A randomised controlled trial (RCT) was run."),
    ...                        ("p2", "Real-time cardiac telemetry (RCT) was used.")])
    >>> [(f.kind, f.keyword, f.paragraph_id, f.other.paragraph_id) for f in found]
    [('abbreviation', 'RCT', 'p2', 'p1')]
    """
    seen_abbr: dict[str, tuple[str, Location]] = {}
    seen_term: dict[str, tuple[str, Location]] = {}
    out = []
    for pid, text in paragraphs:
        pairs = [(m.group(1), m.group(2), _loc(pid, m, 2)) for m in _ABBREV_EN.finditer(text)]
        pairs += [(m.group(2), m.group(1), _loc(pid, m, 1)) for m in _ABBREV_EN_REV.finditer(text)]
        pairs += [(m.group(1), m.group(2), _loc(pid, m, 2)) for m in _ABBREV_ZH.finditer(text)]
        pairs += [(m.group(2), m.group(1), _loc(pid, m, 1)) for m in _ABBREV_ZH_REV.finditer(text)]
        for words, abbr, where in pairs:
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(abbr)}(?![A-Za-z0-9])", words):
                continue  # "late AMD (neovascular AMD and ...)": a list or a gloss that names it, not a definition
            term = _expansion(words, abbr)
            if term is None:  # not its initials: still a finding when the words end with a term defined before
                term = next((t for t in seen_term if _term_key(words).endswith(t)), None)
            if term is None:
                continue
            key = _term_key(term)
            if abbr in seen_abbr and _term_key(seen_abbr[abbr][0]) != key:
                first_term, first = seen_abbr[abbr]
                out.append(Finding("abbreviation", pid, abbr, first, where,
                                   f"{abbr} is defined as “{first_term}” and as “{term}”",
                                   f"Use one expansion of {abbr}, or a different abbreviation for “{term}”."))
            elif key in seen_term and seen_term[key][0] != abbr:
                first_abbr, first = seen_term[key]
                out.append(Finding("abbreviation", pid, abbr, first, where,
                                   f"“{term}” is abbreviated {first_abbr} and {abbr}",
                                   f"Use one abbreviation for “{term}” throughout."))
            seen_abbr.setdefault(abbr, (term, where))
            seen_term.setdefault(key, (abbr, where))
    return out


def _term_key(term: str) -> str:
    """A term as compared across definitions: case, hyphens and a plural -s aside.

    >>> _term_key("Entomological inoculation rates") == _term_key("entomological inoculation rate")
    True
    """
    return " ".join(re.sub(r"(?<=[a-z]{3})s$", "", word) for word in term.casefold().replace("-", " ").split())


def _expansion(words: str, abbr: str) -> str | None:
    """The trailing words of `words` that `abbr` abbreviates, or None; Chinese terms as they are. First by initials in
    order; else as Schwartz & Hearst (2003) define an abbreviation (each letter found right to left in the words, the
    first one starting a word), over at most min(len(abbr) + 5, 2 * len(abbr)) words.

    >>> _expansion("In 2020 a randomised controlled trial", "RCT"), _expansion("the results", "RCT")
    ('randomised controlled trial', None)
    >>> _expansion("coffee is rich in chlorogenic acids", "CGA"), _expansion("it uses Polyethylene", "PE")
    ('chlorogenic acids', 'Polyethylene')
    """
    if re.search(r"[\u4e00-\u9fff]", words):
        return words
    tokens = re.findall(r"[A-Za-z][A-Za-z\-]*", words)
    letters = abbr.upper()
    for start in range(len(tokens) - 1, -1, -1):
        candidate = tokens[start:]
        initials = "".join(t[0].upper() for t in candidate if t.lower() not in ("of", "and", "the", "for", "in", "on"))
        if initials == letters:
            return " ".join(candidate)
        if len(candidate) > len(letters) + 3:
            break
    limit = min(len(letters) + 5, 2 * len(letters))
    for start in range(len(tokens) - 1, max(-1, len(tokens) - 1 - limit), -1):
        if _schwartz_hearst(abbr, " ".join(tokens[start:])):
            return " ".join(tokens[start:])
    return None


def _schwartz_hearst(abbr: str, words: str) -> bool:
    """Whether `words` is a definition of `abbr` by Schwartz & Hearst's rule: the abbreviation's letters and digits
    occur in `words` right to left, in order, the first one at the start of a word, and that word is the first one.

    >>> _schwartz_hearst("CGA", "chlorogenic acids"), _schwartz_hearst("CGA", "coffee acids")
    (True, False)
    """
    chars = [c.lower() for c in abbr if c.isalnum()]
    text = words.lower()
    position = len(text) - 1
    for index in range(len(chars) - 1, -1, -1):
        while position >= 0 and (text[position] != chars[index]
                                 or (index == 0 and position > 0 and text[position - 1].isalnum())):
            position -= 1
        if position < 0:
            return False
        if index > 0:
            position -= 1
    return position == 0


def unit_formats(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """One unit written two ways (mg and 毫克, % and per cent), once per unit family.

    >>> [f.keyword for f in unit_formats([("p1", "a dose of 50 mg"), ("p2", "剂量为100毫克")])]
    ['毫克']
    """
    first: dict[str, tuple[str, Location]] = {}
    reported: set[str] = set()
    out = []
    for pid, text in paragraphs:
        spans = [(m.group(2), _loc(pid, m, 2)) for m in _NUMBER_UNIT.finditer(text)]
        spans += [("百分之", Location(pid, m.start(), m.start() + 3, "百分之")) for m in _ZH_PERCENT.finditer(text)]
        for spelling, where in sorted(spans, key=lambda s: s[1].start):
            family = next((name for name, forms in _UNIT_FAMILIES.items() if spelling in forms), None)
            if family is None:
                continue
            if family not in first:
                first[family] = (spelling, where)
            elif first[family][0] != spelling and family not in reported:
                reported.add(family)
                out.append(Finding("unit_format", pid, spelling, first[family][1], where,
                                   f"{family} is written {first[family][0]!r} and {spelling!r}",
                                   f"Write {family} one way through the document (e.g. {first[family][0]!r})."))
    return out


# unit spelling -> (dimension, canonical unit): spellings of one canonical unit are one unit (unit_format's business);
# two canonical units of one dimension are a unit_mismatch when one number is stated in both. Longest spellings first.
_UNITS: dict[str, tuple[str, str]] = {}
for _dimension, _table in {
    "temperature": {"°C": ("°C", "℃", "摄氏度", "degrees Celsius"), "°F": ("°F", "℉", "华氏度", "degrees Fahrenheit"),
                    "K": ("K", "kelvin", "开尔文")},
    "flow": {"m³/s": ("m³/s", "m3/s", "cubic metres per second", "cubic meters per second", "立方米/秒",
                      "立方米每秒"),
             "ft³/s": ("cubic feet per second", "cfs", "ft³/s", "立方英尺/秒"),
             "L/s": ("L/s", "升/秒", "litres per second")},
    "length": {"mm": ("mm", "毫米"), "cm": ("cm", "厘米"), "m": ("m", "米", "metres", "meters"),
               "km": ("km", "公里", "千米", "kilometres", "kilometers"), "mile": ("miles", "mile", "英里"),
               "ft": ("ft", "feet", "foot", "英尺"), "inch": ("inches", "inch", "英寸")},
    "area": {"m²": ("m²", "m2", "平方米", "square metres", "square meters"), "km²": ("km²", "km2", "平方公里"),
             "ha": ("hectares", "hectare", "ha", "公顷"), "acre": ("acres", "acre", "英亩"), "mu": ("亩",)},
    "volume": {"L": ("litres", "liters", "litre", "liter", "L", "升"), "mL": ("mL", "ml", "毫升"),
               "m³": ("m³", "m3", "cubic metres", "cubic meters", "立方米"), "gal": ("gallons", "gallon", "加仑")},
    "mass": {"mg": ("mg", "毫克"), "g": ("g", "克"), "kg": ("kg", "公斤", "千克"), "t": ("tonnes", "tonne", "t", "吨"),
             "lb": ("lb", "lbs", "pounds", "磅"), "µg": ("µg", "μg", "微克")},
    "energy": {"kWh": ("kWh", "千瓦时", "度电"), "MWh": ("MWh", "兆瓦时"), "GWh": ("GWh", "吉瓦时"),
               "万kWh": ("万千瓦时",), "亿kWh": ("亿千瓦时",)},
    "pressure": {"Pa": ("Pa", "帕"), "kPa": ("kPa", "千帕"), "MPa": ("MPa", "兆帕"), "bar": ("bar",),
                 "psi": ("psi",), "mmHg": ("mmHg", "毫米汞柱"), "atm": ("atm",)},
    "power": {"W": ("W", "瓦"), "kW": ("kW", "千瓦"), "MW": ("MW", "兆瓦"), "GW": ("GW", "吉瓦")},
    # seconds to hours only: "12 weeks" and "12 months" are routinely two follow-up times of one trial
    "duration": {"s": ("seconds", "second", "sec", "秒钟"), "min": ("minutes", "minute", "min", "分钟"),
                 "h": ("hours", "hour", "h", "hrs", "小时")},
}.items():
    for _canonical, _spellings in _table.items():
        for _spelling in _spellings:
            _UNITS[_spelling] = (_dimension, _canonical)
_QUANTITY = re.compile(
    r"(?<![\d.,])(\d{1,3}(?:[ ,\u2009\u202f]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:-|\s*)("
    + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)) + r")(?![A-Za-z0-9²³/])")


def quantities(pid: str, text: str) -> list[tuple[float, str, str, Location]]:
    """(value, dimension, canonical unit, where) of each number-with-unit in `text` (thousands groups with commas or
    spaces; "0.8-acre" counts).

    >>> [(v, d, u) for v, d, u, _ in quantities("p1", "a 0.8-hectare strip, 1 850立方米 and 14.2 m³/s")]
    [(0.8, 'area', 'ha'), (1850.0, 'volume', 'm³'), (14.2, 'flow', 'm³/s')]
    """
    out = []
    for match in _QUANTITY.finditer(text):
        value = float(re.sub(r"[ ,\u2009\u202f]", "", match.group(1)))
        dimension, canonical = _UNITS[match.group(2)]
        out.append((value, dimension, canonical, _loc(pid, match)))
    return out


def unit_mismatches(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """One number stated in two different units of one dimension (850 °C and 850 K, 0.8 hectare and 0.8 acre, 86.5
    公里 and 86.5英里, 5克 and 5毫克): the same quantity with its unit changed, or a conversion never done. Parsed
    quantities, not phrase lists; a number with its converted value beside it (20 °C (68 °F)) has two numbers and
    is not a finding. Once per (number, dimension).

    >>> found = unit_mismatches([("p1", "The salt bath ran at 850 °C."), ("p2", "After the 850 K step, we cooled it.")])
    >>> [(f.kind, f.keyword, f.paragraph_id, f.other.paragraph_id) for f in found]
    [('unit_mismatch', '850 K', 'p2', 'p1')]
    """
    first: dict[tuple[float, str], tuple[str, Location]] = {}
    reported: set[tuple[float, str]] = set()
    out = []
    for pid, text in paragraphs:
        for value, dimension, unit, where in quantities(pid, text):
            if dimension == "duration" and value < 10:
                continue  # "3 min" and "3 h" are two timings of one protocol far more often than one slip
            key = (value, dimension)
            if key not in first:
                first[key] = (unit, where)
            elif first[key][0] != unit and key not in reported:
                reported.add(key)
                before = first[key][1]
                out.append(Finding("unit_mismatch", pid, where.text, before, where,
                                   f"{before.text!r} and {where.text!r}: the same number in two {dimension} units",
                                   f"Check which unit is meant and state the quantity in one unit (convert the other: "
                                   f"{before.text!r} is not {where.text!r}).",
                                   {"value": value, "dimension": dimension, "units": [first[key][0], unit]}))
    return out


_CHANGE = re.compile(r"\b(?:lowered|raised|reduced|increased|cut|revised|tightened|relaxed|updated|changed|"
                     r"lowers|raises|reduces|increases)\b|下调|上调|调整为|调整|降至|降为|提高到|提高至|升至|收紧|放宽|改为",
                     re.I)
_OLD_MARK = re.compile(r"(?:\bfrom|\bthan|\bpreviously|\bformerly|由|从|较|原)\s*[^\d\s]{0,12}\s*$", re.I)
_CURRENT = re.compile(r"\b(?:currently|current|now|at present|presently|in force)\b|现行|目前|当前|现阶段", re.I)
_MEASURE = ("元", "项", "克", "辆", "人", "次", "个", "台", "吨", "亩", "户", "天", "岁", "所", "家")
_VALUE = re.compile(r"(?<![\d.,])(\d{1,3}(?:[ ,]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s*"
                    r"(µg/m³|μg/m³|mg/L|mmHg|kg N/ha|[A-Za-z]+/[A-Za-z³²]+|[\u4e00-\u9fff]|[A-Za-zµμ°]+)")


def _values(text: str, offset: int = 0) -> list[tuple[float, str, int, int]]:
    """(value, unit, start, end) of each number with a unit (a parsed-quantity unit, a "x/y" unit or a Chinese
    measure word); numbers without one are left out."""
    out = []
    for m in _VALUE.finditer(text):
        unit = m.group(2)
        if unit in _UNITS:
            unit = _UNITS[unit][1]
        elif not ("/" in unit or unit in _MEASURE or unit in ("mmHg", "µg/m³", "μg/m³")):
            continue
        out.append((float(re.sub(r"[ ,]", "", m.group(1))), unit, offset + m.start(), offset + m.end()))
    return out


def outdated_values(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """A value stated as current ("currently recommends 10 µg/m³", 现行每亩40元) that a change stated elsewhere in the
    document has replaced ("lowered ... from 10 µg/m³ to 5 µg/m³", 将补贴下调为每亩30元): the current sentence's
    value differs from the changed quantity's new value in the same unit, and the two sentences share at least a
    tenth of the current sentence's content words (the same topic). A change sentence's new values are its values not
    marked as the old one (from, than, 由, 从, 较 just before). Once per current sentence.

    >>> found = outdated_values([("p1", "In 2024 the province lowered the grant from 40 yuan/mu to 30 yuan/mu."),
    ...                          ("p2", "At the current grant of 40 yuan/mu, the method pays.")])
    >>> [(f.kind, f.keyword, f.paragraph_id, f.other.paragraph_id) for f in found]
    [('outdated_value', '40 yuan/mu', 'p2', 'p1')]
    """
    sentences = [(pid, a, text[a:b]) for pid, text in paragraphs for a, b in sentence_spans(text)]
    changes = []
    for pid, start, sentence in sentences:
        if _CHANGE.search(sentence):
            new = [(v, u) for v, u, a, _ in _values(sentence) if not _OLD_MARK.search(sentence[max(0, a - 16):a])]
            if new:
                changes.append((pid, start, sentence, new))
    out = []
    for pid, start, sentence in sentences:
        if not _CURRENT.search(sentence) or _CHANGE.search(sentence):
            continue
        for value, unit, a, b in _values(sentence):
            hit = next(((cpid, cstart, csent) for cpid, cstart, csent, new in changes
                        if (cpid, cstart) != (pid, start) and any(u == unit and w != value for w, u in new)
                        and (value, unit) not in new and content_containment(sentence, csent) >= 0.1), None)
            if hit is not None:
                cpid, cstart, csent = hit
                where = Location(pid, start + a, start + b, sentence[a:b])
                other = Location(cpid, cstart, cstart + len(csent), csent.strip())
                out.append(Finding("outdated_value", pid, where.text, other, where,
                                   f"{where.text!r} is stated as current, but the document says it changed: "
                                   f"“{csent.strip()[:120]}”",
                                   "State the value in force now, or say that this figure is the former one."))
                break
    return out


_FIGURE = re.compile(r"(?<![\d.,])(\d{1,3}(?:[ ,\u2009]\d{3})+|\d{3,}|\d+\.\d+)(?![\d])")
_YEAR = re.compile(r"^(1[89]|20)\d\d$")


# a statistic, not a figure restated: an estimate with its interval, a ratio, a mean with its spread (95% CI 1.13 to
# 1.31; HR, 1.24; 32.7 +/- 4; 0.37 [0.16-0.84]); on public abstracts these made most transposition false alarms
_STAT_BEFORE = re.compile(r"(?:\b(?:CI|HR|RR|OR|RD|RHR|SD|SE|SEM|IQR|AUC|NN[TH]B?|P|p|r|ratio)\b[^A-Za-z\d]{0,6}|"
                          r"(?:±|\+/-|\bvs\.?|\bversus|\bto|=|<|>|–|\[|\()\s*-?)$")
_STAT_AFTER = re.compile(r"^\s*(?:±|\+/-|\bto\b|–|-\s*\d|\(\s*95|\[|,\s*\d|;\s*95)")


def _figures(pid: str, text: str) -> list[tuple[str, Location]]:
    """(digits with the decimal point kept, where) of each figure of three or more significant digits; years and
    statistics (`_STAT_BEFORE`, `_STAT_AFTER`: an interval, a ratio, a mean +/- its spread) left out."""
    out = []
    for m in _FIGURE.finditer(text):
        digits = re.sub(r"[ ,\u2009]", "", m.group(1))
        if (sum(c.isdigit() for c in digits.lstrip("0.")) >= 3 and not _YEAR.match(m.group(1))  # 1860 is a year
                and not _STAT_BEFORE.search(text[max(0, m.start() - 12):m.start()])
                and not _STAT_AFTER.match(text[m.end():m.end() + 8])):
            out.append((digits, _loc(pid, m, 1)))
    return out


def transposed_figures(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """One figure restated with its digits transposed (1,680 and 1,860; 92.4% and 94.2%; 9 462 and 9 642 residents),
    the classic copying slip: two figures in different paragraphs with the same digits in another order and the
    decimal point in the same place, about the same thing (the 15 characters around each share at least a fifth of
    their content words; wider windows tied "同比增长18.5%" to "占比58.1%" on the bundled report). Once per pair.

    >>> found = transposed_figures([("p1", "Polymer types were confirmed for 1,860 particles."),
    ...                             ("p2", "Of the 1,680 particles characterised by FTIR, most were PE.")])
    >>> [(f.kind, f.keyword, f.paragraph_id, f.other.paragraph_id) for f in found]
    [('number_restated', '1,680', 'p2', 'p1')]
    """
    texts = dict(paragraphs)
    seen: list[tuple[str, Location]] = []
    out = []
    for pid, text in paragraphs:
        for digits, where in _figures(pid, text):
            for before, there in seen:
                if (there.paragraph_id != pid and before != digits and sorted(before) == sorted(digits)
                        and before.find(".") == digits.find(".")):
                    around = text[max(0, where.start - 15):where.end + 15]
                    other = texts[there.paragraph_id][max(0, there.start - 15):there.end + 15]
                    if content_containment(around, other) >= 0.2:
                        out.append(Finding("number_restated", pid, where.text, there, where,
                                           f"{there.text!r} and {where.text!r}: the same digits in another order",
                                           "Check the source for the right figure and state it the same way in "
                                           "both places.", {"figures": [there.text, where.text]}))
                        break
            seen.append((digits, where))
    return out


_COUNT = re.compile(r"(?<![\d.,])(\d{1,3}(?:[ ,\u2009]\d{3})+|\d{3,})(?![\d.,]*\d)(?!\s*[%％年])")
# a change, a comparison or a subset stated just before a count ("from 1,956", "of 100", "than 400", "增至2416"):
# two different counts of one thing are then expected
_CHANGE_OR_SUBSET = re.compile(
    r"(?:\b(?:from|to|of|than|vs\.?|versus|by|reach\w*|exceed\w*|over|under|about|approximately|nearly|almost|"
    r"around|least|most|up|down|only|another|additional|further|extra|remaining|other)|增至|降至|减至|增加到|减少到|"
    r"增加|减少|超过|不足|其中|从|由|达到|近|约|逾|余|另|其余|又)\s*$", re.I)
_SENTENCE_END = re.compile(r"\.(?!\d)|[。;；!?！？\n]")  # a point before a digit is a decimal (7.9)
# what follows a count: a counted noun (participants, 例, 名), never a unit of measure (kg N/ha, 吨, 元): two
# measured values of one unit differ for many reasons (a rate tried, a price), a count of one thing does not
_COUNTED = re.compile(r"\s*(?:[A-Za-z][a-z-]{3,}(?![A-Za-z]*/)|(?!(?:吨|千克|公斤|克|米|公里|千米|元|平方|立方|度|小时|"
                      r"分钟|天|岁|毫|千瓦|兆|瓦|升))[\u4e00-\u9fff])")


def _sentence_around(text: str, m: re.Match) -> tuple[int, int]:
    """The bounds of the sentence holding match `m` (`_SENTENCE_END`: a decimal point does not end it).

    >>> text = "Rates fell. From 7.9% to 8.7% now. Next."
    >>> start, end = _sentence_around(text, re.search("8.7", text)); text[start:end]
    ' From 7.9% to 8.7% now'
    """
    start = max((e.end() for e in _SENTENCE_END.finditer(text, 0, m.start())), default=0)
    return start, next((e.start() for e in _SENTENCE_END.finditer(text, m.end())), len(text))


def _count_mentions(pid: str, text: str) -> list[tuple[int, str, str, Location]]:
    """(value, words just before, words just after, where) of each count of three or more digits (no decimals, no
    percentages, no years) that no change, comparison or subset word just before qualifies, in a sentence holding no
    other count of the same noun (two counts of one thing in a sentence compare them); the windows stop at the
    sentence's end."""
    found = []
    for m in _COUNT.finditer(text):
        digits, counted = re.sub(r"[ ,\u2009]", "", m.group(1)), _COUNTED.match(text, m.end())
        if _YEAR.match(m.group(1)) or not counted:
            continue
        start, end = _sentence_around(text, m)
        before, after = text[max(start, m.start() - 20):m.start()], text[m.end():min(end, m.end() + 20)]
        if not _CHANGE_OR_SUBSET.search(text[max(start, m.start() - 14):m.start()]):
            noun = (start, counted.group(0).strip()[:6].casefold())  # the sentence and the counted noun
            found.append((int(digits), before, after, _loc(pid, m, 1), noun))
    per_noun = Counter(f[4] for f in found)
    return [f[:4] for f in found if per_noun[f[4]] == 1]


MIN_AROUND = 0.3  # the share of one count's surrounding words the other's must hold


def _same_referent(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Whether two counts' surroundings (before, after) name the same thing: the words after each (the counted noun:
    "participants", "例新发病例") hold at least 0.6 of the other's, both ways, and both windows together a half."""
    (before_a, after_a), (before_b, after_b) = a, b

    def named(before: str, after: str) -> bool:  # a counted noun after the count, or (Chinese) a noun just before it
        return bool(re.search(r"[A-Za-z]{3}|[\u4e00-\u9fff]{2}", after) or re.search(r"[\u4e00-\u9fff]{2}$", before))

    if not (named(before_a, after_a) and named(before_b, after_b)):
        return False  # nothing named beside the count: no referent to tie
    return (min(content_containment(after_a, after_b), content_containment(after_b, after_a)) >= 0.6
            and content_containment(before_a + " " + after_a, before_b + " " + after_b) >= MIN_AROUND)


def restated_values(paragraphs: Sequence[tuple[str, str]], max_ratio: float = 1.5) -> list[Finding]:
    """One count restated with another value for the same thing in another paragraph (18,426 participants ... 16,842
    participants; 新增确诊3156例 ... 新增确诊3716例): two counts (three or more digits) whose surrounding words name the
    same thing (`_same_referent`), within `max_ratio` of each other (a copying slip, not another quantity), in
    sentences that state no change, comparison or subset (from, than, of whom, 增, 其中, ...). Once per pair.

    >>> found = restated_values([("p1", "In all, 18,426 participants were enrolled in the cohort."),
    ...                          ("p2", "Of note, 16,842 participants were enrolled in the cohort.")])
    >>> [(f.kind, f.keyword, f.paragraph_id, f.other.paragraph_id) for f in found]
    [('restated_value', '16,842', 'p2', 'p1')]
    >>> restated_values([("p1", "We enrolled 18,426 participants."), ("p2", "Of these, 16,842 participants finished.")])
    []
    """
    seen: list[tuple[int, tuple[str, str], Location]] = []
    out = []
    for pid, text in paragraphs:
        for value, before, after, where in _count_mentions(pid, text):
            for other_value, around, there in seen:
                if (there.paragraph_id != pid and value != other_value
                        and max(value, other_value) <= max_ratio * min(value, other_value)
                        and _same_referent(around, (before, after))):
                    out.append(Finding("restated_value", pid, where.text, there, where,
                                       f"{there.text!r} and {where.text!r}: one count of the same thing stated with "
                                       "two values", "Check the source for the right figure and state it the same "
                                       "way in both places.", {"figures": [there.text, where.text]}))
                    break
            seen.append((value, (before, after), where))
    return out


# Metric terms that are easily swapped for one another and mean different things (the same figure called incidence in
# one place and prevalence in another is one of them mislabelled). Each group: (the term as reported, its pattern).
TERM_GROUPS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("incidence", r"\bincidence\b|\bnew cases\b"), ("prevalence", r"\bprevalence\b"), ("发病率", "发病率|新发"),
     ("患病率", "患病率|检出率")),
    (("mean", r"\bmean\b|\baverage\b"), ("median", r"\bmedian\b"), ("平均", "平均|均值"), ("中位数", "中位")),
    (("mortality", r"\bmortality\b|\bdeath rate\b"), ("morbidity", r"\bmorbidity\b"),
     ("case fatality", r"\bcase[- ]fatality\b"), ("死亡率", "死亡率"), ("病死率", "病死率")),
    (("relative risk", r"(?i:\brelative risk\b|\brisk ratio\b)|\bRR\b"), ("odds ratio", r"(?i:\bodds ratio\b)|\bOR\b"),
     ("hazard ratio", r"(?i:\bhazard ratio\b)|\bHR\b"), ("相对危险度", "相对危险|相对风险"), ("比值比", "比值比"),
     ("风险比", "风险比")),
    (("absolute risk reduction", r"\babsolute (?:risk )?reduction\b"),
     ("relative risk reduction", r"\brelative (?:risk )?reduction\b"), ("绝对风险降低", "绝对风险降低"),
     ("相对风险降低", "相对风险降低")),
    (("efficacy", r"\befficacy\b"), ("effectiveness", r"\beffectiveness\b")),
    (("standard deviation", r"(?i:\bstandard deviation\b)|\bSD\b"),
     ("standard error", r"(?i:\bstandard error\b)|\bSEM?\b"),
     ("标准差", "标准差"), ("标准误", "标准误")),
    (("year-on-year", r"\byear[- ]on[- ]year\b"), ("month-on-month", r"\bmonth[- ]on[- ]month\b"),
     ("quarter-on-quarter", r"\bquarter[- ]on[- ]quarter\b"), ("同比", "同比"), ("环比", "环比")),
    (("response rate", r"\bresponse rate\b"), ("remission rate", r"\bremission rate\b"),
     ("cure rate", r"\bcure rate\b"), ("有效率", "有效率"), ("缓解率", "缓解率"), ("治愈率", "治愈率")),
)
# case-insensitive but for the abbreviations (RR, OR, HR, SD, SE: "or" is a word), which the patterns mark
_TERM_PATTERNS = [[(name, re.compile(pattern if "(?i:" in pattern else f"(?i:{pattern})")) for name, pattern in group]
                  for group in TERM_GROUPS]
_CONFIDENCE = re.compile(r"\s*(?:CI|CrI|CredI|confidence|credible)\b", re.I)
# groups whose values are not tied by figure: one abstract gives many ratios (OR 1.06 for one comparison, RR 1.06 for
# another), so a shared value says nothing there (public abstracts, docs/layers.md); their definitions still count
_NOT_BY_FIGURE = {3}
# a figure worth tying: a decimal, a percentage or a number of two or more digits (not a year)
_TIED_FIGURE = re.compile(r"(?<![\d.,])(\d+\.\d+|\d{2,}(?:,\d{3})*)(\s*%|\s*percent\b)?")


def _metric_mentions(pid: str, text: str) -> list[tuple[str, int, str, Location]]:
    """(figure, term group, term, where: the term through the figure) for each figure whose surroundings in its
    sentence (40 characters before it, 15 after) name exactly one term of one group."""
    found = []
    for m in _TIED_FIGURE.finditer(text):
        if (_YEAR.match(m.group(1)) and not m.group(2)) or _CONFIDENCE.match(text, m.end()):
            continue  # a year, or the level of an interval (95% CI)
        start, end = _sentence_around(text, m)
        lo, hi = max(start, m.start() - 40), min(end, m.end() + 15)
        named = [(g, name, t) for g, group in enumerate(_TERM_PATTERNS) for name, pattern in group
                 for t in (pattern.search(text, lo, m.start()) or pattern.search(text, m.end(), hi),) if t]
        named = [n for n in named if n[0] not in _NOT_BY_FIGURE]
        if len({g for g, _, _ in named}) == 1 and len({name for _, name, _ in named}) == 1:
            group, term, t = named[0]
            figure = m.group(1).replace(",", "") + ("%" if m.group(2) else "")
            left, right = min(t.start(), m.start()), max(t.end(), m.end())
            found.append((figure, group, term, Location(pid, left, right, text[left:right])))
    return found


_DEFINES = re.compile(r"\b(?:is|was|are|were) (?:defined|calculated|measured) as\b|\b(?:is|was|are|were) the "
                      r"(?:proportion|share|percentage|number|rate)\b|\brefers? to\b|\bwe define[sd]?\b|"
                      r"\bdefined as\b|所称|是指|定义为|(?:按|依据|根据)[^，。；]{0,30}计算|(?<![\u4e00-\u9fff]{2}目)指"
                      r"(?=[^，。；]{4,})", re.I)


def _redefined_terms(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """A defined measure reported in a later paragraph under another term of its group, one the document never
    defines: "Prevalence is the proportion of registered adults ..." then "the rise in incidence from 7.9% to 8.7%".
    The later mention must carry a figure (it reports the measure, not names it in passing); a document that
    defines both terms uses both on purpose. Once per (defined term, other term).

    >>> found = _redefined_terms([("p1", "Prevalence is the proportion of adults with diabetes at the survey."),
    ...                           ("p2", "The rise in incidence from 7.9% to 8.7% shows new cases.")])
    >>> [(f.kind, f.keyword, f.other.paragraph_id) for f in found]
    [('term_drift', 'incidence', 'p1')]
    """
    defined: dict[tuple[int, str], Location] = {}
    mentions = []
    order = {pid: index for index, (pid, _) in enumerate(paragraphs)}
    for pid, text in paragraphs:
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            cue = _DEFINES.search(sentence)
            for group, patterns in enumerate(_TERM_PATTERNS):
                for name, pattern in patterns:
                    for m in pattern.finditer(sentence):
                        where = Location(pid, start + m.start(), start + m.end(), m.group(0))
                        # the defined term is the one before the cue ("Prevalence is ...", 本文所称“检出率”指)
                        if cue and (m.start() < cue.start() or sentence[cue.start():cue.end()] == "所称"):
                            defined.setdefault((group, name), where)
                        elif _TIED_FIGURE.search(sentence):
                            mentions.append((group, name, where))
    out, reported = [], set()
    for group, name, where in mentions:
        if (group, name) in defined:
            continue
        other = next((((g, n), loc) for (g, n), loc in defined.items() if g == group and n != name
                      and n.isascii() == name.isascii()), None)
        if other is None or (other[0], name) in reported:
            continue
        (_, defined_name), there = other
        if order[there.paragraph_id] >= order[where.paragraph_id]:
            continue  # defined later, or in the same paragraph: not a drift from a definition
        reported.add((other[0], name))
        out.append(Finding("term_drift", where.paragraph_id, where.text, there, where,
                           f"the document defines {defined_name} ({there.paragraph_id}) and reports {name} here",
                           f"Say whether this is the defined {defined_name} or another measure, and name it the "
                           "same way throughout.", {"terms": [defined_name, name]}))
    return out


def term_drifts(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """One figure given under two metric terms that mean different things, in different paragraphs (an incidence of
    4.2% ... a prevalence of 4.2%; 中位年龄为56岁 ... 平均年龄56岁; an absolute reduction of 3.1% ... a relative
    reduction of 3.1%): one of them mislabels it. Parsed figures tied to a lexicon of easily swapped terms
    (TERM_GROUPS): a figure with one term of one group beside it; once per figure and group.

    >>> found = term_drifts([("p1", "The incidence of dementia was 4.2% in the cohort."),
    ...                      ("p2", "With a dementia prevalence of 4.2%, screening is warranted.")])
    >>> [(f.kind, f.keyword, f.paragraph_id, f.other.paragraph_id) for f in found]
    [('term_drift', 'prevalence of 4.2%', 'p2', 'p1')]
    >>> term_drifts([("p1", "Median age was 56 years."), ("p2", "Median follow-up was 56 months.")])
    []
    """
    first: dict[tuple[str, int], tuple[str, Location]] = {}
    reported: set[tuple[str, int]] = set()
    out = _redefined_terms(paragraphs)
    said = {(f.paragraph_id, frozenset(f.details["terms"])) for f in out}  # one finding per paragraph and terms
    for pid, text in paragraphs:
        for figure, group, term, where in _metric_mentions(pid, text):
            key = (figure, group)
            if key not in first:
                first[key] = (term, where)
            elif (first[key][0] != term and first[key][1].paragraph_id != pid and key not in reported
                  and (pid, frozenset((first[key][0], term))) not in said):
                reported.add(key)
                before_term, before = first[key]
                out.append(Finding("term_drift", pid, where.text, before, where,
                                   f"{figure} is called {before_term} in one place and {term} here",
                                   f"Check which measure {figure} is ({before_term} or {term}) and name it the same "
                                   "way in both places.", {"figure": figure, "terms": [before_term, term]}))
    return out


def percent_points(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """A change of a RATE stated as "rose by N%" in a document that elsewhere gives rate changes in percentage
    points: the reader cannot tell whether that % is relative or absolute. (A change of a quantity that is not itself
    a percentage, "GDP grew by 6.1%", is not ambiguous and is not flagged.)

    >>> found = percent_points([("p1", "Coverage rose by 3 percentage points."), ("p2", "The uptake rate rose by 5%.")])
    >>> [(f.kind, f.keyword) for f in found]
    [('percent_points', '5%')]
    >>> percent_points([("p1", "利率下降0.8个百分点。"), ("p2", "第二产业增加值增长6.1%。")])
    []
    """
    points = [(pid, m) for pid, text in paragraphs for m in _POINTS.finditer(text)]
    changes = [(pid, m) for pid, text in paragraphs for m in _PERCENT_CHANGE.finditer(text)
               if _RATE.search(text[max(0, m.start() - 15):m.start()])]
    if not points or not changes:
        return []
    pid, change = changes[0]
    point_pid, point = points[0]
    keyword = change.group(2) + change.group(3)
    where = Location(pid, change.start(2), change.end(3), keyword)
    return [Finding("percent_points", pid, keyword, _loc(point_pid, point), where,
                    f"changes are given in percentage points ({point.group(0)!r}) and in % ({change.group(0)!r})",
                    "Say whether the % change is relative or in percentage points, and use one form.")]


def number_formats(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """Large numbers written with and without thousands separators (years and ids aside).

    >>> [f.keyword for f in number_formats([("p1", "6,240 adults"), ("p2", "then 12000 more")])]
    ['12000']
    """
    separated = [(pid, m) for pid, text in paragraphs for m in _THOUSANDS_SEP.finditer(text)]
    plain = [(pid, m) for pid, text in paragraphs for m in _THOUSANDS_PLAIN.finditer(text)
             if not _YEARISH.match(m.group(0))]
    if not separated or not plain:
        return []
    (pid, first), (plain_pid, other) = separated[0], plain[0]
    at, before = (_loc(plain_pid, other), _loc(pid, first))
    return [Finding("number_format", at.paragraph_id, at.text, before, at,
                    f"{first.group(0)!r} has a thousands separator, {other.group(0)!r} has none",
                    "Write large numbers one way (with or without separators) through the document.")]


def citation_formats(paragraphs: Sequence[tuple[str, str]]) -> list[Finding]:
    """Author-year citations mixed with numbered ones, or two author-year styles mixed.

    >>> found = citation_formats([("p1", "as Smith et al. (2019) showed"), ("p2", "as shown before [3].")])
    >>> [(f.keyword, f.other.text) for f in found]
    [('[3]', 'Smith et al. (2019)')]
    """
    styles = {"author (year)": _CITE_AUTHOR_THEN_YEAR, "(author, year)": _CITE_AUTHOR_YEAR_PAREN,
              "[n]": _CITE_NUMBERED}
    first: dict[str, Location] = {}
    for pid, text in paragraphs:
        for style, pattern in styles.items():
            for m in pattern.finditer(text):
                if style == "[n]" or _YEARISH.match(m.group(2)):
                    first.setdefault(style, _loc(pid, m))
    if len(first) < 2:
        return []
    ordered = sorted(first.items(), key=lambda kv: (kv[1].paragraph_id, kv[1].start))
    (style_a, a), (style_b, b) = ordered[0], ordered[1]
    return [Finding("citation_format", b.paragraph_id, b.text, a, b,
                    f"citations in two styles: {style_a} ({a.text!r}) and {style_b} ({b.text!r})",
                    "Cite in one style through the document.")]


CHECKS = {"abbreviation": abbreviations, "unit_format": unit_formats, "unit_mismatch": unit_mismatches,
          "outdated_value": outdated_values, "number_restated": transposed_figures,
          "percent_points": percent_points,
          "number_format": number_formats, "citation_format": citation_formats, "restated_value": restated_values,
          "term_drift": term_drifts}


def consistency_findings(paragraphs: Sequence[tuple[str, str]], kinds: Sequence[str] = DEFAULT_KINDS) -> list[Finding]:
    """Every consistency finding of the document (`paragraphs`: (paragraph id, text) in document order).

    Raises:
        ValueError: an unknown kind.
    """
    unknown = sorted(set(kinds) - set(CHECKS))
    if unknown:
        raise ValueError(f"consistency kinds {unknown}: expected some of {', '.join(CHECKS)}")
    return [finding for kind in kinds for finding in CHECKS[kind](paragraphs)]
