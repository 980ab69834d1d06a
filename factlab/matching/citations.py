"""The citation model shared by the checker's rules and the knowledge layer: reading citations out of text, and
deciding whether a cited work IS a given work (its identity; whether the work supports a claim is another question,
answered by the callers).

A work is any record with the source-record fields `title`, `author`, `year` and `doi` (a dict or an object; see
datasets/README.md): the checker's source records, and the knowledge layer's items as the source records they become.
A mention names a work by DOI (the same DOI once normalised), by 《title》 or a bare title (normalised titles equal,
or one containing the other when both have at least `MIN_TITLE_CHARS` characters), or by authors and year (the same
year exactly; the first cited author is the work's first author, any other named author is one of its authors;
"et al." names nobody).

>>> [m.text for m in find_citations("Smith et al. (2019) and (Lee, 2017) agree; see doi:10.1000/xyz.")]
['Smith et al. (2019)', 'Lee, 2017', '10.1000/xyz']
>>> [m.authors for m in find_citations("张三等（2020）指出")]
[['张三']]
>>> work = {"title": "Aspirin and stroke", "author": "Smith, J.; Lee, K.", "year": 2019, "doi": "10.1000/A"}
>>> [identity_matches(parse_citation(c), work) for c in ("Smith et al. (2019)", "Smith (2018)", "doi:10.1000/a")]
[True, False, True]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from factlab.schema import normalise_text

_YEAR = r"(?P<year>(?:1[5-9]|20)\d{2})[a-z]?"
_PARTICLE = r"(?:(?:van|von|de|der|den|del|la|le|du|di|da|dos)\s+)*"
_EN_NAME = _PARTICLE + r"[A-Z][A-Za-z'\u00c0-\u024f\-]*[A-Za-z\u00c0-\u024f]"
_EN_AUTHORS = (
    rf"{_EN_NAME}(?:\s+et\s+al\.?|(?:\s*,\s*{_EN_NAME})*\s*,?\s*(?:and|&)\s+{_EN_NAME})?"
)
_CJK = r"\u4e00-\u9fff"
_ZH_AUTHORS = rf"[{_CJK}·]{{2,16}}"

# "Smith et al. (2019)", "Smith and Lee (2019a)"
_EN_NARRATIVE = re.compile(rf"(?<![\w'])(?P<authors>{_EN_AUTHORS})\s*\(\s*{_YEAR}\s*\)")
# "张三等（2020）", "张三和李四(2020年)"
_ZH_NARRATIVE = re.compile(rf"(?P<authors>{_ZH_AUTHORS})\s*[（(]\s*{_YEAR}\s*年?\s*[）)]")
_PARENS = re.compile(r"[（(](?P<body>[^()（）]{3,300})[)）]")
# One entry inside parentheses: "Lee, 2017", "Lee et al. 2017", "张三等，2020"
_PAREN_ENTRY = re.compile(
    rf"^\s*(?:see\s+|e\.g\.,?\s+|cf\.\s+|参见|见)?(?P<authors>{_EN_AUTHORS}|{_ZH_AUTHORS})\s*[,，]?\s*{_YEAR}\s*年?\s*$"
)
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>，。；、（）《》]+")
_BOOK_TITLE = re.compile(r"《(?P<title>[^《》]{1,200})》")
_ZH_SPLIT = re.compile(r"[和与及、]")
_EN_SPLIT = re.compile(r"\s*(?:,|\band\b|&)\s*")
_WORK_AUTHOR_SPLIT = re.compile(r";|；|,|，|、|&|\band\b|和|与")
_NAME_WORD = re.compile(r"[a-z\u00c0-\u024f'\-]+")
MIN_TITLE_CHARS = 6  # shorter titles match too many things by containment


@dataclass
class CitationMention:
    """One citation found in a text: author + year, DOI, or a 《title》 (or a bare title, see `parse_citation`)."""

    text: str  # verbatim mention
    kind: str  # "author_year" | "doi" | "title"
    start: int
    end: int
    authors: list[str] = field(default_factory=list)  # named authors, first first; "et al." dropped
    year: int | None = None
    doi: str = ""
    title: str = ""


def _zh_authors(raw: str) -> list[str]:
    """Split a Chinese author run: "张三和李四等" -> ["张三", "李四"].

    >>> _zh_authors("张三和李四等人")
    ['张三', '李四']
    """
    raw = re.sub(r"等人?$", "", raw)
    return [part for part in _ZH_SPLIT.split(raw) if part]


def _en_authors(raw: str) -> list[str]:
    """Split an English author run: "Smith, Lee and Wang" -> ["Smith", "Lee", "Wang"].

    >>> _en_authors("Smith et al.")
    ['Smith']
    """
    raw = re.sub(r"\s+et\s+al\.?$", "", raw.strip())
    return [part for part in _EN_SPLIT.split(raw) if part]


def _authors(raw: str) -> list[str]:
    return _zh_authors(raw) if re.search(rf"[{_CJK}]", raw) else _en_authors(raw)


def normalise_doi(doi: str) -> str:
    """Canonical DOI: lower case, no resolver prefix, no trailing punctuation.

    >>> normalise_doi("https://doi.org/10.1000/ABC.")
    '10.1000/abc'
    >>> normalise_doi("doi: 10.1000/x(1))")
    '10.1000/x(1)'
    >>> normalise_doi("")
    ''
    """
    doi = doi.strip().lower()
    doi = re.sub(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", "", doi)
    while doi and doi[-1] in ".,;:]）)":
        if doi[-1] == ")" and doi.count("(") >= doi.count(")"):
            break
        doi = doi[:-1]
    return doi


def find_citations(text: str) -> list[CitationMention]:
    """Find citation mentions in a claim or sentence, in text order.

    Recognises narrative "Smith et al. (2019)", "Smith and Lee (2019)", parenthetical "(Lee, 2017)",
    "(Smith et al., 2019; Wang, 2020)", DOIs, Chinese "张三等（2020）", "（张三，2020）" and 《书名》 titles.
    Chinese author runs are taken greedily (no segmentation), so "研究表明张三等（2020）" yields the
    author "研究表明张三"; matching against works therefore uses containment.

    Args:
        text: any text.

    Returns:
        Non-overlapping mentions sorted by start offset.

    >>> [(m.kind, m.authors, m.year) for m in find_citations("(Smith et al., 2019; Wang and Li, 2020)")]
    [('author_year', ['Smith'], 2019), ('author_year', ['Wang', 'Li'], 2020)]
    >>> [m.title for m in find_citations("据《柳叶刀》报道")]
    ['柳叶刀']
    >>> find_citations("The drug cut mortality by 20% (p < 0.05, n = 2019).")
    []
    """
    found: list[CitationMention] = []
    for match in _DOI.finditer(text):
        doi = normalise_doi(match.group(0))
        end = match.start() + len(doi)
        found.append(CitationMention(text[match.start():end], "doi", match.start(), end, doi=doi))
    for pattern in (_EN_NARRATIVE, _ZH_NARRATIVE):
        for match in pattern.finditer(text):
            found.append(
                CitationMention(
                    match.group(0), "author_year", match.start(), match.end(),
                    authors=_authors(match.group("authors")), year=int(match.group("year")),
                )
            )
    for parens in _PARENS.finditer(text):
        offset = parens.start("body")
        for part in re.finditer(r"[^;；]+", parens.group("body")):
            entry = _PAREN_ENTRY.match(part.group(0))
            if not entry:
                continue
            start = offset + part.start() + entry.start("authors")
            end = offset + part.start() + len(part.group(0).rstrip())
            found.append(
                CitationMention(
                    text[start:end], "author_year", start, end,
                    authors=_authors(entry.group("authors")), year=int(entry.group("year")),
                )
            )
    for match in _BOOK_TITLE.finditer(text):
        found.append(
            CitationMention(match.group(0), "title", match.start(), match.end(), title=match.group("title").strip())
        )
    # Keep the longest of overlapping mentions, then restore text order.
    kept: list[CitationMention] = []
    for mention in sorted(found, key=lambda m: (-(m.end - m.start), m.start)):
        if all(mention.end <= k.start or mention.start >= k.end for k in kept):
            kept.append(mention)
    return sorted(kept, key=lambda m: m.start)


def parse_citation(cited: str) -> CitationMention:
    """Read one cited string as one mention: its first mention, "Lee, 2017" (a parenthetical without its brackets)
    included; a string that holds no mention is a bare title.

    >>> [(m.kind, m.authors, m.year) for m in map(parse_citation, ["Lee, 2017", "张三等（2020）"])]
    [('author_year', ['Lee'], 2017), ('author_year', ['张三'], 2020)]
    >>> parse_citation(" Global tuberculosis report 2020 ").title
    'Global tuberculosis report 2020'
    """
    mentions = find_citations(cited) or find_citations(f"({cited})")
    if mentions:
        return mentions[0]
    return CitationMention(cited, "title", 0, len(cited), title=cited.strip())


def work_field(work: Any, name: str) -> Any:
    """An optional field of a work given as a dict or an object (None when absent).

    >>> work_field({"year": 2019}, "year"), work_field({"year": 2019}, "doi")
    (2019, None)
    """
    if isinstance(work, Mapping):
        return work.get(name)
    return getattr(work, name, None)


def work_authors(author_field: Any) -> list[str]:
    """Split a work's author metadata into name chunks, first author first.

    >>> work_authors("Smith, J.; Lee, K.")
    ['Smith', 'J.', 'Lee', 'K.']
    >>> work_authors(["张三", "李四"])
    ['张三', '李四']
    """
    if not author_field:
        return []
    if isinstance(author_field, str):
        parts = _WORK_AUTHOR_SPLIT.split(author_field)
    else:
        parts = [p for a in author_field for p in _WORK_AUTHOR_SPLIT.split(str(a))]
    return [p.strip() for p in parts if p.strip()]


def name_matches(mentioned: str, work_name: str) -> bool:
    """Does a mentioned author name denote this author name chunk of a work?

    A Western mention denotes a name when its last word (the surname) is one of the name's words; a Chinese mention
    when it contains the name (at least 2 characters; mentions are read greedily, see `find_citations`).

    >>> name_matches("Smith", "John Smith")
    True
    >>> name_matches("研究表明张三", "张三")
    True
    >>> name_matches("张三", "张三丰")
    False
    """
    if re.search(rf"[{_CJK}]", mentioned):
        name = re.sub(r"\s+", "", work_name)
        return len(name) >= 2 and name in re.sub(r"\s+", "", mentioned)
    words = _NAME_WORD.findall(work_name.lower())
    mentioned_words = _NAME_WORD.findall(mentioned.lower())
    # The surname is the mention's last word; it must be one of the work's name words.
    return bool(mentioned_words) and mentioned_words[-1] in words


def title_matches(cited: str, title: str) -> bool:
    """Is `cited` this work's title: equal once normalised (`factlab.schema.normalise_text`), or one containing the
    other when both have at least `MIN_TITLE_CHARS` characters?

    >>> title_matches("Global Tuberculosis Report, 2020", "Global tuberculosis report 2020")
    True
    >>> title_matches("Deep residual learning", "Deep Residual Learning for Image Recognition")
    True
    >>> title_matches("Cell", "Cell Reports"), title_matches("", "")
    (False, False)
    """
    cited, title = normalise_text(cited), normalise_text(title)
    if not cited or not title:
        return False
    if cited == title:
        return True
    return min(len(cited), len(title)) >= MIN_TITLE_CHARS and (cited in title or title in cited)


def identity_matches(mention: CitationMention, work: Any) -> bool:
    """Does the mention name this work (a dict or an object with `title`, `author`, `year`, `doi`)?

    By the mention's kind: a DOI names the work with the same normalised DOI; a title the work whose title matches
    (`title_matches`); authors + year the work of that exact year whose first author is the first cited author and
    among whose authors every other cited author is. A work without the field asked for (no DOI, no year, no
    authors) is not named.
    """
    if mention.kind == "doi":
        doi = work_field(work, "doi")
        return bool(doi) and normalise_doi(str(doi)) == mention.doi
    if mention.kind == "title":
        return title_matches(mention.title, str(work_field(work, "title") or ""))
    year = work_field(work, "year")
    if mention.year is None or year is None or str(year).strip() != str(mention.year):
        return False
    names = work_authors(work_field(work, "author"))
    if not names or not mention.authors:
        return False
    first, *others = mention.authors
    # The first cited author must be the work's first author; any other named author must appear.
    return name_matches(first, names[0]) and all(any(name_matches(o, n) for n in names) for o in others)
