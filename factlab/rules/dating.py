"""Dating: when a source was written, read from its metadata, title and text (English and Chinese); text in, values
out (no I/O, no model).

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
older or newer than another (`newer`, `not_after`: a part unknown on either side cannot be compared).

The date patterns (`DATE_RE`, `STATUS_PATTERNS`) and `parse_date` also read the dates a claim is anchored at
(factlab/rules/tense.py); the timeliness rule that compares the dates is factlab/rules/timeliness.py.

>>> source_date({"title": "X", "text": "The board first met in 2010. Published 3 May 2021."})
(2021, 5, 3)
>>> source_date({"title": "云岫省饮用水卫生条例（2023年修订）", "text": "本条例自2016年5月1日起施行。", "year": 2024})
(2024, None, None)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Date = tuple[int, int | None, int | None]

_MONTHS = {name: number for number, names in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
     ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
     ("dec", "december")], start=1) for name in names}
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
YEAR_RE = r"(?:1[89]\d\d|20\d\d)"  # a year as a regular expression (tense.py anchors claims with it)
_ORD = r"(?:st|nd|rd|th)?"
# One date as a regular expression, most specific alternative first; `parse_date` reads the match back into
# (year, month, day).
DATE_RE = (rf"(?:(?<!\d){YEAR_RE}\s*年(?:\s*\d{{1,2}}\s*月(?:\s*\d{{1,2}}\s*[日号])?)?"
           rf"|(?<!\d){YEAR_RE}[-/.]\d{{1,2}}(?:[-/.]\d{{1,2}})?(?!\d|\.\d)"
           rf"|\b\d{{1,2}}{_ORD}\s+{_MONTH}\.?,?\s+{YEAR_RE}(?!\d)"
           rf"|\b{_MONTH}\.?\s+\d{{1,2}}{_ORD},?\s+{YEAR_RE}(?!\d)"
           rf"|\b{_MONTH}\.?,?\s+{YEAR_RE}(?!\d)"
           rf"|(?<!\d){YEAR_RE}(?!\d))")
# The forms a Chinese text writes a date in (no English month names): for the patterns that start with the date.
_DATE_ZH = (rf"(?:(?<!\d){YEAR_RE}\s*年(?:\s*\d{{1,2}}\s*月(?:\s*\d{{1,2}}\s*[日号])?)?"
            rf"|(?<!\d){YEAR_RE}[-/.]\d{{1,2}}(?:[-/.]\d{{1,2}})?(?!\d|\.\d)|(?<!\d){YEAR_RE}(?!\d))")
_ZH_YMD = re.compile(rf"({YEAR_RE})\s*年(?:\s*(\d{{1,2}})\s*月(?:\s*(\d{{1,2}})\s*[日号])?)?")
_ISO = re.compile(rf"({YEAR_RE})[-/.](\d{{1,2}})(?:[-/.](\d{{1,2}}))?")
_EN_DMY = re.compile(rf"(\d{{1,2}}){_ORD}\s+({_MONTH})\.?,?\s+({YEAR_RE})", re.IGNORECASE)
_EN_MDY = re.compile(rf"({_MONTH})\.?\s+(\d{{1,2}}){_ORD},?\s+({YEAR_RE})", re.IGNORECASE)
_EN_MY = re.compile(rf"({_MONTH})\.?,?\s+({YEAR_RE})", re.IGNORECASE)
_PLAIN_YEAR = re.compile(rf"({YEAR_RE})")

_GAP = r"[^.;。；\n]{0,24}?"  # a few words between a keyword and its date ("revised edition, effective 1 Jan 2022")
# (kind, pattern with one group `d`): the explicit dates of a document's own events (precedence level 3).
_EVENTS: tuple[tuple[str, re.Pattern], ...] = tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in (
    ("updated", rf"\b(?:last\s+)?(?:updated|reviewed)\b[:\s]*{_GAP}(?P<d>{DATE_RE})"),
    ("revised", rf"\b(?:revised|amended)\b[:\s]*{_GAP}(?P<d>{DATE_RE})"),
    ("effective", rf"\b(?:effective|in (?:force|effect)|(?:came|comes|entered|enters) into (?:force|effect)|valid)"
                  rf"\b[:\s]*{_GAP}(?P<d>{DATE_RE})"),
    ("published", rf"\b(?:published|issued|released|adopted|approved|promulgated|dated)\b[:\s]*{_GAP}(?P<d>{DATE_RE})"),
    ("revised", rf"(?<!\d)(?P<d>{YEAR_RE})\s+(?:revision|amendment|amendments)\b"),
    ("published", r"(?:发布|印发|公布|颁布|出版)(?:日期|时间)[:：\s]*(?P<d>" + DATE_RE + ")"),
    ("updated", r"更新(?:日期|时间|于)[:：\s]*(?P<d>" + DATE_RE + ")"),
    ("revised", r"修订(?:日期|时间)[:：\s]*(?P<d>" + DATE_RE + ")"),
    ("effective", r"(?:施行|实施|生效)(?:日期|时间)[:：\s]*(?P<d>" + DATE_RE + ")"),
    ("published", r"(?P<d>" + _DATE_ZH + r")\s*(?:正式)?(?:发布|印发|公布|颁布|发表|出版)"),
    ("revised", r"(?P<d>" + _DATE_ZH + r")\s*(?:第[一二三四五六七八九十\d]+次)?(?:修订|修正|修改)"),
    ("effective", r"(?P<d>" + _DATE_ZH + r")\s*(?:起)?(?:正式)?(?:施行|实施|生效)"),
    ("updated", r"(?P<d>" + _DATE_ZH + r")\s*更新"),
))
# Editions and versions (level 4): "2020版", "2021 edition", "(2023 update)", "version 2021".
_EDITIONS: tuple[re.Pattern, ...] = (
    re.compile(rf"(?<!\d)(?P<d>{YEAR_RE})\s*年?\s*版(?!权)"),
    re.compile(rf"(?<!\d)(?P<d>{YEAR_RE})\s+(?:edition|update|version|release)\b", re.IGNORECASE),
    re.compile(rf"\b(?:edition|version|release)\s+(?:of\s+)?(?P<d>{YEAR_RE})(?!\d)", re.IGNORECASE),
    re.compile(rf"(?:©|\(c\)|\bcopyright\b)\s*(?P<d>{YEAR_RE})(?!\d)", re.IGNORECASE),
)
_TITLE_PAREN_YEAR = re.compile(rf"[(（]\s*(?P<d>{YEAR_RE})\s*[)）]")  # "Guideline on X (2021)": title / first line only
# A status date, "as of March 2022" / "截至2022年底" (group `d`): a source's level 5, a claim's date bound.
STATUS_PATTERNS = (re.compile(rf"\bas (?:of|at)\s+(?P<d>{DATE_RE})", re.IGNORECASE),
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


def parse_date(text: str) -> Date | None:
    """(year, month, day) of one written date, None parts unknown; None when it is not a date.

    >>> parse_date("2021-05-03"), parse_date("2021年5月"), parse_date("March 2022"), parse_date("May 3, 2021")
    ((2021, 5, 3), (2021, 5, None), (2022, 3, None), (2021, 5, 3))
    >>> parse_date("soon") is None
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


def date_sort_key(date: Date) -> tuple[int, int, int]:
    """A date as a sort key, an unknown month or day as 0 (before any known one).

    >>> date_sort_key((2021, None, None)) < date_sort_key((2021, 1, None)) < date_sort_key((2021, 1, 2))
    True
    """
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


def record_field(record: Any, name: str) -> Any:
    """A field of a source record, a dict or an object (None when it has none, or when the record is None).

    >>> record_field({"title": "T"}, "title"), record_field({"title": "T"}, "year"), record_field(None, "title")
    ('T', None, None)
    """
    if record is None:
        return None
    return record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)


def _record_text(record: Any) -> str:
    text = record_field(record, "text")
    pages = record_field(record, "pages")
    parts = [text] if isinstance(text, str) else []
    if isinstance(pages, list | tuple):
        parts += [p for p in pages if isinstance(p, str)]
    return "\n".join(parts)


def _latest(found: list[FoundDate]) -> FoundDate | None:
    return max(found, key=lambda f: date_sort_key(f.date), default=None)


def _scan(patterns: Iterable[tuple[str, re.Pattern]], text: str) -> list[FoundDate]:
    found = []
    for kind, pattern in patterns:
        for m in pattern.finditer(text):
            date = parse_date(m["d"])
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
    status = _scan((("as_of", p) for p in STATUS_PATTERNS), both)
    if status:
        return _latest(status)
    years = [FoundDate((int(m[1]), None, None), "title_year", m[1]) for m in re.finditer(rf"(?<!\d)({YEAR_RE})(?!\d)",
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
    date = record_field(record, "date")
    if isinstance(date, str) and (parsed := parse_date(date)) is not None:
        return FoundDate(parsed, "metadata_date", date)
    if isinstance(date, int) and not isinstance(date, bool) and _PLAIN_YEAR.fullmatch(str(date)):
        return FoundDate((date, None, None), "metadata_date", str(date))
    year = record_field(record, "year")
    if isinstance(year, str) and year.strip().isdigit():
        year = int(year.strip())
    if isinstance(year, int) and not isinstance(year, bool) and 1000 <= year <= 2999:
        return FoundDate((year, None, None), "metadata_year", str(year))
    title = record_field(record, "title")
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
