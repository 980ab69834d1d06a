"""Timeliness: a claim about what is current is checked against the newest authoritative source it was judged on.

Three parts, all text in, values out (no I/O, no model):

**A source's date** (`source_date`, `find_source_date`), highest precedence first:

1. metadata `date` ("2021-05-03", "2021-05", "2021"; also "3 May 2021", "2021年5月3日"); an unreadable one is skipped;
2. metadata `year`;
3. an explicit publication / revision / effective / update date in the title or the text ("Published 3 May 2021",
   "Updated: 2022-01-10", "revised ... effective 1 January 2022", "2021年5月3日发布", "2022年修订",
   "自2023年1月1日起施行", "更新日期：2022-01-10"); the LATEST of them, since a revision or an entry into force dates
   the version at hand (and "replaces the guideline published in 2018" names an older one);
4. an edition or version in the title or text ("2020版", "2021 edition", "(2023 update)", a "(2021)" in the title);
5. a status date in the text ("as of March 2022", "截至2022年底");
6. a year in the title ("Annual Report 2021").

A year merely mentioned in the body ("the board first met in 2010", "自2023年起取消") is never the source's date:
it says what the text is about, not when it was written. No date at all -> None, and such a source is never called
older or newer than another.

**A claim's time** (`claim_tense`, `is_current_claim`): `current` when it has a current cue (the current guideline,
currently, now, today, the latest, in force, still, as of <date>; 现行, 目前, 当前, 现在, 最新, 仍, 截至...), else
`past` on a past marker (previously, formerly, used to, under the old code; 曾, 此前, 过去, 旧版, 原《…》...), else
`dated` when it is anchored at a year ("In 2019 the guideline recommended", "the 2019 edition", "2019年，..."), else
`unmarked`. A current cue wins over a past marker. "as of <date>" / "截至<date>", "in <year>" ("In 2019 the guideline
still recommended", but not "issued in 2023", which dates a document) and a dated claim's year bound the sources that
can speak for the claim: a source dated after the bound says nothing about it ("As of 2022, the cap is 1.2 g" is not
refuted by a 2024 change).

**The rule** (`Timeliness.apply`), per support / partial_support S from a dated source, for a current or dated claim:
the candidates are the other judged sources that are strictly newer than S (a year-only date is not newer than a
full date of the same year), at least as authoritative (tier number <= S's) and not after the claim's bound. Walking
them newest first, the first one that speaks decides:

- it supports / partially supports the claim -> S is kept (the claim is still true);
- it contradicts the claim -> S becomes `insufficient`;
- it is a newer version of S's document -> S becomes `insufficient`, whatever it says (supersedes: the two titles are
  equal after stripping years, dates, brackets and edition words: edition, revised, update, 修订, 2020版 ...);
- otherwise (another document that does not speak to the claim) the next candidate is tried.

A downgraded S gets the note "<where> supports only the past: superseded by <title> (<date>)". A past claim keeps
every support (with a note when one would have been downgraded). An unmarked claim ("The code caps nitrate at
50 mg/L") reads in the present, but without a cue only a contradiction from a newer source is strong enough
(`unmarked: contradicted`, the default); `current` applies both rules, `ignore` none. `newest` is always the newest
dated source among all the judged ones, whatever its tier or relation (ties: the better tier, then the first judged),
so a card can show it.

>>> source_date({"title": "X", "text": "The board first met in 2010. Published 3 May 2021."})
(2021, 5, 3)
>>> source_date({"title": "云岫省饮用水卫生条例（2023年修订）", "text": "本条例自2016年5月1日起施行。", "year": 2024})
(2024, None, None)
>>> claim_tense("现行《云岫省饮用水卫生条例》规定限值为每升50毫克。").kind, is_current_claim("此前票价为2元。")
('current', False)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from factlab.rules.business import JudgedEvidence
from factlab.schema import Evidence, Judgment

Date = tuple[int, int | None, int | None]
SUPPORTING = ("support", "partial_support")
UNMARKED_MODES = ("ignore", "contradicted", "current")
TENSES = ("current", "past", "dated", "unmarked")

# ---------------------------------------------------------------- dates in text

_MONTHS = {name: number for number, names in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
     ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
     ("dec", "december")], start=1) for name in names}
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_YEAR = r"(?:1[89]\d\d|20\d\d)"
_ORD = r"(?:st|nd|rd|th)?"
# One date, most specific alternative first; `_parse_date` reads the match back into (year, month, day).
_DATE = (rf"(?:(?<!\d){_YEAR}\s*年(?:\s*\d{{1,2}}\s*月(?:\s*\d{{1,2}}\s*[日号])?)?"
         rf"|(?<!\d){_YEAR}[-/.]\d{{1,2}}(?:[-/.]\d{{1,2}})?(?!\d|\.\d)"
         rf"|\b\d{{1,2}}{_ORD}\s+{_MONTH}\.?,?\s+{_YEAR}(?!\d)"
         rf"|\b{_MONTH}\.?\s+\d{{1,2}}{_ORD},?\s+{_YEAR}(?!\d)"
         rf"|\b{_MONTH}\.?,?\s+{_YEAR}(?!\d)"
         rf"|(?<!\d){_YEAR}(?!\d))")
# The forms a Chinese text writes a date in (no English month names): for the patterns that start with the date.
_DATE_ZH = (rf"(?:(?<!\d){_YEAR}\s*年(?:\s*\d{{1,2}}\s*月(?:\s*\d{{1,2}}\s*[日号])?)?"
            rf"|(?<!\d){_YEAR}[-/.]\d{{1,2}}(?:[-/.]\d{{1,2}})?(?!\d|\.\d)|(?<!\d){_YEAR}(?!\d))")
_ZH_YMD = re.compile(rf"({_YEAR})\s*年(?:\s*(\d{{1,2}})\s*月(?:\s*(\d{{1,2}})\s*[日号])?)?")
_ISO = re.compile(rf"({_YEAR})[-/.](\d{{1,2}})(?:[-/.](\d{{1,2}}))?")
_EN_DMY = re.compile(rf"(\d{{1,2}}){_ORD}\s+({_MONTH})\.?,?\s+({_YEAR})", re.IGNORECASE)
_EN_MDY = re.compile(rf"({_MONTH})\.?\s+(\d{{1,2}}){_ORD},?\s+({_YEAR})", re.IGNORECASE)
_EN_MY = re.compile(rf"({_MONTH})\.?,?\s+({_YEAR})", re.IGNORECASE)
_PLAIN_YEAR = re.compile(rf"({_YEAR})")

_GAP = r"[^.;。；\n]{0,24}?"  # a few words between a keyword and its date ("revised edition, effective 1 Jan 2022")
# (kind, pattern with one group `d`): the explicit dates of a document's own events (precedence level 3).
_EVENTS: tuple[tuple[str, re.Pattern], ...] = tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in (
    ("updated", rf"\b(?:last\s+)?(?:updated|reviewed)\b[:\s]*{_GAP}(?P<d>{_DATE})"),
    ("revised", rf"\b(?:revised|amended)\b[:\s]*{_GAP}(?P<d>{_DATE})"),
    ("effective", rf"\b(?:effective|in (?:force|effect)|(?:came|comes|entered|enters) into (?:force|effect)|valid)"
                  rf"\b[:\s]*{_GAP}(?P<d>{_DATE})"),
    ("published", rf"\b(?:published|issued|released|adopted|approved|promulgated|dated)\b[:\s]*{_GAP}(?P<d>{_DATE})"),
    ("revised", rf"(?<!\d)(?P<d>{_YEAR})\s+(?:revision|amendment|amendments)\b"),
    ("published", r"(?:发布|印发|公布|颁布|出版)(?:日期|时间)[:：\s]*(?P<d>" + _DATE + ")"),
    ("updated", r"更新(?:日期|时间|于)[:：\s]*(?P<d>" + _DATE + ")"),
    ("revised", r"修订(?:日期|时间)[:：\s]*(?P<d>" + _DATE + ")"),
    ("effective", r"(?:施行|实施|生效)(?:日期|时间)[:：\s]*(?P<d>" + _DATE + ")"),
    ("published", r"(?P<d>" + _DATE_ZH + r")\s*(?:正式)?(?:发布|印发|公布|颁布|发表|出版)"),
    ("revised", r"(?P<d>" + _DATE_ZH + r")\s*(?:第[一二三四五六七八九十\d]+次)?(?:修订|修正|修改)"),
    ("effective", r"(?P<d>" + _DATE_ZH + r")\s*(?:起)?(?:正式)?(?:施行|实施|生效)"),
    ("updated", r"(?P<d>" + _DATE_ZH + r")\s*更新"),
))
# Editions and versions (level 4): "2020版", "2021 edition", "(2023 update)", "version 2021".
_EDITIONS: tuple[re.Pattern, ...] = (
    re.compile(rf"(?<!\d)(?P<d>{_YEAR})\s*年?\s*版(?!权)"),
    re.compile(rf"(?<!\d)(?P<d>{_YEAR})\s+(?:edition|update|version|release)\b", re.IGNORECASE),
    re.compile(rf"\b(?:edition|version|release)\s+(?:of\s+)?(?P<d>{_YEAR})(?!\d)", re.IGNORECASE),
    re.compile(rf"(?:©|\(c\)|\bcopyright\b)\s*(?P<d>{_YEAR})(?!\d)", re.IGNORECASE),
)
_TITLE_PAREN_YEAR = re.compile(rf"[(（]\s*(?P<d>{_YEAR})\s*[)）]")  # "Guideline on X (2021)": title / first line only
_STATUS = (re.compile(rf"\bas (?:of|at)\s+(?P<d>{_DATE})", re.IGNORECASE),
           re.compile(r"(?:截至|截止)(?:到|至)?\s*(?P<d>" + _DATE_ZH + ")"))


_ZH_DIGITS = {c: str(i) for i, c in enumerate("〇一二三四五六七八九")} | {"零": "0"}
_ZH_NUMERAL_DATE = re.compile(r"([〇零一二三四五六七八九]{4})\s*年(?:\s*([一二三四五六七八九十]{1,3})\s*月"
                              r"(?:\s*([一二三四五六七八九十]{1,3})\s*[日号])?)?")


def _small_number(text: str) -> int:
    """一 .. 三十一 as an int (months and days)."""
    if "十" not in text:
        return int(_ZH_DIGITS[text])
    tens, _, units = text.partition("十")
    return (int(_ZH_DIGITS[tens]) if tens else 1) * 10 + (int(_ZH_DIGITS[units]) if units else 0)


def arabic_dates(text: str) -> str:
    """Chinese-numeral dates (the signature line of an official document) written in Arabic digits.

    >>> arabic_dates("二〇二三年五月三十一日发布"), arabic_dates("十二月")
    ('2023年5月31日发布', '十二月')
    """
    def one(m: re.Match) -> str:
        out = "".join(_ZH_DIGITS[c] for c in m[1]) + "年"
        if m[2]:
            out += f"{_small_number(m[2])}月" + (f"{_small_number(m[3])}日" if m[3] else "")
        return out

    return _ZH_NUMERAL_DATE.sub(one, text) if "年" in text else text


def _clean(year: int, month: int | None, day: int | None) -> Date:
    if month is not None and not 1 <= month <= 12:
        month = day = None
    if day is not None and not 1 <= day <= 31:
        day = None
    return year, month, day


def _parse_date(text: str) -> Date | None:
    """(year, month, day) of one written date, None parts unknown; None when it is not a date.

    >>> _parse_date("2021-05-03"), _parse_date("2021年5月"), _parse_date("March 2022"), _parse_date("May 3, 2021")
    ((2021, 5, 3), (2021, 5, None), (2022, 3, None), (2021, 5, 3))
    >>> _parse_date("soon") is None
    True
    """
    text = text.strip()
    if m := _ZH_YMD.fullmatch(text):
        return _clean(int(m[1]), int(m[2]) if m[2] else None, int(m[3]) if m[3] else None)
    if m := _ISO.fullmatch(text):
        return _clean(int(m[1]), int(m[2]), int(m[3]) if m[3] else None)
    if m := _EN_DMY.fullmatch(text):
        return _clean(int(m[3]), _MONTHS[m[2].lower()], int(m[1]))
    if m := _EN_MDY.fullmatch(text):
        return _clean(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))
    if m := _EN_MY.fullmatch(text):
        return _clean(int(m[2]), _MONTHS[m[1].lower()], None)
    if m := _PLAIN_YEAR.fullmatch(text):
        return int(m[1]), None, None
    return None


def _sort_key(date: Date) -> tuple[int, int, int]:
    return date[0], date[1] or 0, date[2] or 0


def newer(a: Date, b: Date) -> bool:
    """True when `a` is certainly later than `b`: a part unknown on either side compares as "same, cannot tell".

    >>> newer((2023, None, None), (2021, 5, 3)), newer((2021, None, None), (2021, 5, 3))
    (True, False)
    >>> newer((2021, 6, 1), (2021, 5, 9)), newer((2021, 5, 9), (2021, 5, 9))
    (True, False)
    """
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            return False
        if x != y:
            return x > y
    return False


def not_after(a: Date, bound: Date) -> bool:
    """True unless `a` is certainly later than `bound`.

    >>> not_after((2022, 6, None), (2022, None, None)), not_after((2024, None, None), (2022, 12, 31))
    (True, False)
    """
    return not newer(a, bound)


def format_date(date: Date) -> str:
    """"2021-05-03", "2021-05" or "2021".

    >>> format_date((2021, 5, 3)), format_date((2021, 5, None)), format_date((2021, None, None))
    ('2021-05-03', '2021-05', '2021')
    """
    year, month, day = date
    return f"{year}" + (f"-{month:02d}" if month else "") + (f"-{day:02d}" if month and day else "")


@dataclass(frozen=True)
class FoundDate:
    """A source's date and where it came from: `kind` is metadata_date, metadata_year, published, revised,
    effective, updated, edition, as_of or title_year; `text` is the span it was read from."""

    date: Date
    kind: str
    text: str = ""


def _field(record: Any, name: str) -> Any:
    if record is None:
        return None
    return record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)


def _record_text(record: Any) -> str:
    text = _field(record, "text")
    pages = _field(record, "pages")
    parts = [text] if isinstance(text, str) else []
    if isinstance(pages, list | tuple):
        parts += [p for p in pages if isinstance(p, str)]
    return "\n".join(parts)


def _latest(found: list[FoundDate]) -> FoundDate | None:
    return max(found, key=lambda f: _sort_key(f.date), default=None)


def _scan(patterns: Iterable[tuple[str, re.Pattern]], text: str) -> list[FoundDate]:
    found = []
    for kind, pattern in patterns:
        for m in pattern.finditer(text):
            date = _parse_date(m["d"])
            if date is not None:
                found.append(FoundDate(date, kind, m[0].strip()))
    return found


@functools.lru_cache(maxsize=4096)  # one source is dated once per run, not once per claim that cites it
def date_in_text(title: str, text: str) -> FoundDate | None:
    """The date a title and text give their document (precedence levels 3-6 of the module doc), None without one.

    >>> date_in_text("", "霁川市人民政府2023年3月15日发布通知，最低工资标准调整为每月2400元。")
    FoundDate(date=(2023, 3, 15), kind='published', text='2023年3月15日发布')
    >>> date_in_text("Marlow rules, 2023 edition", "Cod quota 3,200 tonnes.").date
    (2023, None, None)
    >>> date_in_text("Report", "In 2019 the committee met; since 2020 it meets twice.") is None
    True
    """
    title, text = arabic_dates(title or ""), arabic_dates(text or "")
    both = f"{title}\n{text}"
    explicit = _scan(_EVENTS, both)
    if explicit:
        return _latest(explicit)
    head = f"{title}\n{text.lstrip().splitlines()[0] if text.strip() else ''}"
    editions = _scan((("edition", p) for p in _EDITIONS), both) + _scan([("edition", _TITLE_PAREN_YEAR)], head)
    if editions:
        return _latest(editions)
    status = _scan((("as_of", p) for p in _STATUS), both)
    if status:
        return _latest(status)
    years = [FoundDate((int(m[1]), None, None), "title_year", m[1]) for m in re.finditer(rf"(?<!\d)({_YEAR})(?!\d)",
                                                                                          title)]
    return _latest(years)


def find_source_date(record: Any) -> FoundDate | None:
    """A source record's date with its kind (metadata first, then the title and text; see the module doc).

    `record` is a dict (a corpus line: source_id, title, text or pages, year, date, ...) or an object with those
    attributes (factlab.retrieval.records.Source).

    >>> find_source_date({"title": "T", "date": "2021-05", "year": 2020})
    FoundDate(date=(2021, 5, None), kind='metadata_date', text='2021-05')
    >>> find_source_date({"title": "T", "year": "2020"}).kind
    'metadata_year'
    """
    date = _field(record, "date")
    if isinstance(date, str) and (parsed := _parse_date(date)) is not None:
        return FoundDate(parsed, "metadata_date", date)
    if isinstance(date, int) and not isinstance(date, bool) and _PLAIN_YEAR.fullmatch(str(date)):
        return FoundDate((date, None, None), "metadata_date", str(date))
    year = _field(record, "year")
    if isinstance(year, str) and year.strip().isdigit():
        year = int(year.strip())
    if isinstance(year, int) and not isinstance(year, bool) and 1000 <= year <= 2999:
        return FoundDate((year, None, None), "metadata_year", str(year))
    title = _field(record, "title")
    return date_in_text(title if isinstance(title, str) else "", _record_text(record))


def source_date(record: Mapping | Any) -> Date | None:
    """(year, month, day) of a source record, month / day None when unknown; None when it carries no date.

    >>> source_date({"title": "Guideline", "text": "Updated: 2022-01-10. It replaces the guideline published in 2018."})
    (2022, 1, 10)
    >>> source_date({"title": "X指南（2020版）", "text": "推荐……"})
    (2020, None, None)
    >>> source_date({"title": "Notes", "text": "The committee met in 2019."}) is None
    True
    """
    found = find_source_date(record)
    return found.date if found else None


# ---------------------------------------------------------------- a claim's time

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
               rf"(?P<d>{_DATE})", re.IGNORECASE),
    re.compile(rf"\b(?P<d>{_YEAR})\s+(?:edition|version|update|revision|guidelines?|code|rules?|report|schedule|"
               rf"plan|standard|list|budget|figures?)\b", re.IGNORECASE),
    re.compile(rf"(?<![自从\d])(?P<d>{_YEAR}\s*年(?:\s*\d{{1,2}}\s*月(?:\s*\d{{1,2}}\s*[日号])?)?)"
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
            if (date := _parse_date(m["d"])) is not None:
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
class _Cues:
    current: tuple[re.Pattern, ...]
    past: tuple[re.Pattern, ...]

    @classmethod
    def compile(cls, current: Mapping[str, Sequence[str]], past: Mapping[str, Sequence[str]],
                where: str = "timeliness") -> _Cues:
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
        for pattern in self.current:
            if m := pattern.search(claim):
                bound = next((d for p in _STATUS if (s := p.search(claim)) and (d := _parse_date(s["d"]))), None)
                if bound is None and (anchored := _anchor(claim, _ANCHORS[:1])):  # "In 2019 ... still ..."
                    bound = anchored[1]
                return ClaimTense("current", m[0], bound)
        for pattern in self.past:
            if m := pattern.search(claim):
                return ClaimTense("past", m[0])
        if anchored := _anchor(claim, _ANCHORS):
            return ClaimTense("dated", *anchored)
        return ClaimTense("unmarked")


_DEFAULT_CUES = _Cues.compile(CURRENT_CUES, PAST_CUES)


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


# ---------------------------------------------------------------- supersession

_EDITION_WORDS = re.compile(
    r"(?<!\d)(?:1[89]|20)\d\d\s*年?\s*版(?!权)"
    r"|(?<!\d)(?:1[89]|20)\d\d(?:\s*年(?:\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?)?|[-/.]\d{1,2}(?:[-/.]\d{1,2})?)?"
    r"|第\s*[一二三四五六七八九十\d]+\s*(?:次|版)|(?:修订|修正|修改)(?:版|本|稿)?|新版|旧版|最新版|现行|草案|征求意见稿"
    r"|\b(?:\d+(?:st|nd|rd|th)|first|second|third|new|latest|current|consolidated)\b"
    r"|\b(?:revised|revision|amended|amendments?|edition|version|update[ds]?|draft)\b|\bv\d+(?:\.\d+)*\b",
    re.IGNORECASE,
)
_NOT_WORD = re.compile(r"[\s\W_]+")


def title_family(title: str) -> str:
    """A title with years, dates, edition words, brackets and punctuation stripped: two sources whose titles share a
    family are versions of one document.

    >>> title_family("Ostvale Hypertension Guideline (2023 update)") == title_family("Ostvale Hypertension Guideline")
    True
    >>> title_family("云岫省饮用水卫生条例（2023年修订）"), title_family("《临沅省校园食品安全规范（2018版）》")
    ('云岫省饮用水卫生条例', '临沅省校园食品安全规范')
    """
    return _NOT_WORD.sub("", _EDITION_WORDS.sub(" ", title or "")).lower()


def same_document(title_a: str, title_b: str) -> bool:
    """True when the two titles are one family of at least 4 characters (an equal family, never a containment:
    "Guideline on hypertension in children" is not a version of "Guideline on hypertension")."""
    a, b = title_family(title_a), title_family(title_b)
    return len(a) >= 4 and a == b


# ---------------------------------------------------------------- the rule

@dataclass(frozen=True)
class NewestSource:
    """The newest dated source among a claim's judged evidence, for the card."""

    source_id: str
    title: str
    date: Date
    tier: int
    kind: str = ""  # where the date came from (FoundDate.kind)

    @property
    def date_text(self) -> str:
        return format_date(self.date)

    def __str__(self) -> str:
        return f"{self.title} ({self.date_text})"

    def to_dict(self) -> dict:
        return {**asdict(self), "date": self.date_text}


@dataclass(frozen=True)
class _Dated:
    index: int
    item: JudgedEvidence
    title: str
    found: FoundDate | None


def _as_judged(item: JudgedEvidence | tuple[Evidence, Judgment], index: int) -> JudgedEvidence:
    if isinstance(item, JudgedEvidence):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        return JudgedEvidence(*item)
    raise TypeError(f"judged evidence #{index}: expected JudgedEvidence or an (Evidence, Judgment) pair, "
                    f"got {type(item).__name__}")


def _index_sources(sources: Mapping[str, Any] | Iterable[Any] | None) -> dict[str, Any]:
    if sources is None:
        return {}
    if isinstance(sources, Mapping):
        return {str(k): v for k, v in sources.items()}
    index = {}
    for record in sources:
        source_id = _field(record, "source_id")
        if source_id:
            index[str(source_id)] = record
    return index


@dataclass
class Timeliness:
    """The timeliness check; one instance per conf/timeliness/<name>.yaml (`timeliness=off` turns it off).

    Args:
        name: the config's name, for messages.
        enabled: False = `apply` changes nothing, adds no note and returns no newest source.
        unmarked: how a claim with no time cue is read: `contradicted` (default: only a newer contradicting source
            downgrades an older support), `current` (as if it said "current") or `ignore`.
        current_cues / past_cues: regular expressions per language (case-insensitive), searched in the claim.
    """

    name: str = "default"
    enabled: bool = True
    unmarked: str = "contradicted"
    current_cues: Mapping[str, Sequence[str]] = field(default_factory=lambda: {k: list(v) for k, v in
                                                                                CURRENT_CUES.items()})
    past_cues: Mapping[str, Sequence[str]] = field(default_factory=lambda: {k: list(v) for k, v in
                                                                             PAST_CUES.items()})

    def __post_init__(self) -> None:
        where = f"timeliness {self.name!r} (conf/timeliness/{self.name}.yaml)"
        if not isinstance(self.enabled, bool):
            raise ValueError(f"{where}: field enabled must be true or false, got {self.enabled!r}")
        if self.unmarked not in UNMARKED_MODES:
            raise ValueError(f"{where}: field unmarked is {self.unmarked!r}; expected one of "
                             f"{', '.join(UNMARKED_MODES)}")
        for name in ("current_cues", "past_cues"):
            if not isinstance(getattr(self, name), Mapping):
                raise ValueError(f"{where}: field {name} must map a language to a list of regular expressions")
        self._cues = _Cues.compile(self.current_cues, self.past_cues, where)

    def tense(self, claim: str) -> ClaimTense:
        """The claim's time with this config's cues."""
        return self._cues.tense(claim)

    def apply(
        self,
        claim: str,
        judged: Sequence[JudgedEvidence | tuple[Evidence, Judgment]],
        sources: Mapping[str, Any] | Iterable[Any] | None = None,
    ) -> tuple[list[JudgedEvidence], list[str], NewestSource | None]:
        """The judged evidence with superseded support downgraded, the notes for the card, and the newest source.

        Args:
            claim: the claim's text.
            judged: every snippet the judge saw for this claim with its judgment (JudgedEvidence or (Evidence,
                Judgment) pairs), as `BusinessRules.decide` takes them.
            sources: the source records by source_id, or an iterable of records (dicts or objects with source_id,
                title, year, date, text / pages). A snippet whose source is missing or undated is dated from its
                own title and text.

        Returns:
            (judged', notes, newest): judged' has the same length and order, each item a JudgedEvidence, a
            downgraded one with an `insufficient` judgment; notes are reviewer hints; newest is the newest dated
            source among the judged ones (None when none is dated, or when the check is off).
        """
        items = [_as_judged(item, i) for i, item in enumerate(judged)]
        if not self.enabled:
            return items, [], None
        index = _index_sources(sources)
        dated = [self._dated(i, item, index) for i, item in enumerate(items)]
        newest = self._newest(dated)
        tense = self.tense(claim)
        rules = self._rules(tense)
        notes: list[str] = []
        if tense.kind == "current" and any(d.item.relation in SUPPORTING for d in dated):
            notes.append(f"claim about what is current ({tense.cue!r}"
                         + (f", as of {format_date(tense.as_of)}" if tense.as_of else "") + "): "
                         + (f"newest dated source {newest} (tier {newest.tier})" if newest
                            else "no judged source carries a date; timeliness not checked"))
        out = list(items)
        for d in dated:
            if d.item.relation not in SUPPORTING or d.found is None:
                continue
            decider = self._decider(d, dated, tense, contradict_only=rules == "contradict")
            if decider is None:
                continue
            by = f"{decider.title} ({format_date(decider.found.date)})"
            if rules is None:
                notes.append(f"{d.item.where()} ({format_date(d.found.date)}) kept for a {tense.kind} claim "
                             f"({tense.cue!r}), though {by} supersedes it")
                continue
            reason = f"supports only the past: superseded by {by}"
            out[d.index] = JudgedEvidence(d.item.evidence, Judgment("insufficient", d.item.confidence,
                                                                    f"timeliness: {reason}"))
            notes.append(f"{d.item.where()} ({format_date(d.found.date)}) {reason}")
        return out, notes, newest

    def _rules(self, tense: ClaimTense) -> str | None:
        """"all" (contradict + same document), "contradict" (contradict only) or None (keep every support)."""
        if tense.kind in ("current", "dated"):
            return "all"
        if tense.kind == "unmarked":
            return {"current": "all", "contradicted": "contradict", "ignore": None}[self.unmarked]
        return None

    @staticmethod
    def _dated(i: int, item: JudgedEvidence, index: Mapping[str, Any]) -> _Dated:
        ev = item.evidence
        record = index.get(ev.source_id)
        title = _field(record, "title") or ev.title or ev.source_id
        found = find_source_date(record) if record is not None else None
        if found is None:
            found = date_in_text(ev.title or str(title), ev.text)
        return _Dated(i, item, str(title), found)

    @staticmethod
    def _newest(dated: list[_Dated]) -> NewestSource | None:
        with_date = [d for d in dated if d.found is not None]
        if not with_date:
            return None
        best = min(with_date, key=lambda d: (tuple(-x for x in _sort_key(d.found.date)), d.item.tier, d.index))
        return NewestSource(best.item.evidence.source_id, best.title, best.found.date, best.item.tier,
                            best.found.kind)

    @staticmethod
    def _decider(support: _Dated, dated: list[_Dated], tense: ClaimTense, contradict_only: bool) -> _Dated | None:
        """The newer, at-least-as-authoritative source that supersedes `support` on this claim, or None."""
        own = support.item.evidence.source_id
        by_source: dict[str, list[_Dated]] = {}
        for d in dated:
            if (d.found is not None and d.item.evidence.source_id != own and d.item.tier <= support.item.tier
                    and newer(d.found.date, support.found.date)
                    and (tense.as_of is None or not_after(d.found.date, tense.as_of))):
                by_source.setdefault(d.item.evidence.source_id, []).append(d)
        ranked = sorted(by_source.values(), key=lambda ds: (tuple(-x for x in _sort_key(ds[0].found.date)),
                                                              min(d.item.tier for d in ds), ds[0].index))
        for snippets in ranked:
            relations = {d.item.relation for d in snippets}
            if relations & set(SUPPORTING):
                return None  # the newer source still backs the claim
            if "contradict" in relations:
                return snippets[0]
            if not contradict_only and same_document(support.title, snippets[0].title):
                return snippets[0]
        return None

