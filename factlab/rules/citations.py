"""Citation checks: does the work a claim cites exist among the sources, and does that work support the claim?

Two separate questions, because generated reports fail them separately ("citation splicing": a real
paper cited for something it never says):

- identity exists: the cited work (DOI, title, or first author + year) is found in the ingested
  sources' metadata (`doi`, `title`, `author`, `year`);
- content supports: a judged snippet OF THAT SOURCE has relation `support`.

>>> [m.text for m in find_citations("Smith et al. (2019) and (Lee, 2017) agree; see doi:10.1000/xyz.")]
['Smith et al. (2019)', 'Lee, 2017', '10.1000/xyz']
>>> [m.authors for m in find_citations("张三等（2020）指出")]
[['张三']]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from factlab.rules.business import JudgedEvidence
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
_SOURCE_AUTHOR_SPLIT = re.compile(r";|；|,|，|、|&|\band\b|和|与")
_MIN_TITLE_CHARS = 6  # shorter titles match too many things by containment


@dataclass
class CitationMention:
    """One citation found in a text: author + year, DOI, or a 《title》."""

    text: str  # verbatim mention
    kind: str  # "author_year" | "doi" | "title"
    start: int
    end: int
    authors: list[str] = field(default_factory=list)  # named authors, first first; "et al." dropped
    year: int | None = None
    doi: str = ""
    title: str = ""


@dataclass
class CitationCheck:
    """Result of checking one cited work against the sources and the judged evidence."""

    cited: str
    identity_exists: bool
    content_supports: bool
    matched_source_id: str | None
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CitationCheck:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"CitationCheck: unknown field(s) {unknown}; expected {sorted(names)}")
        return cls(**data)

    @property
    def ok(self) -> bool:
        return self.identity_exists and self.content_supports


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
    author "研究表明张三"; matching against sources therefore uses containment.

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


def _source_field(source: Any, name: str) -> Any:
    """Read an optional metadata field from a source record given as a dict or an object."""
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _source_authors(author_field: Any) -> list[str]:
    """Split a source's author metadata into name chunks, first author first.

    >>> _source_authors("Smith, J.; Lee, K.")
    ['Smith', 'J.', 'Lee', 'K.']
    >>> _source_authors(["张三", "李四"])
    ['张三', '李四']
    """
    if not author_field:
        return []
    if isinstance(author_field, str):
        parts = _SOURCE_AUTHOR_SPLIT.split(author_field)
    else:
        parts = [p for a in author_field for p in _SOURCE_AUTHOR_SPLIT.split(str(a))]
    return [p.strip() for p in parts if p.strip()]


def _name_matches(mentioned: str, source_name: str) -> bool:
    """Does a mentioned author name denote this source author name chunk?

    >>> _name_matches("Smith", "John Smith")
    True
    >>> _name_matches("研究表明张三", "张三")
    True
    >>> _name_matches("张三", "张三丰")
    False
    """
    if re.search(rf"[{_CJK}]", mentioned):
        name = re.sub(r"\s+", "", source_name)
        return len(name) >= 2 and name in re.sub(r"\s+", "", mentioned)
    words = re.findall(r"[a-z\u00c0-\u024f'\-]+", source_name.lower())
    mentioned_words = re.findall(r"[a-z\u00c0-\u024f'\-]+", mentioned.lower())
    # The surname is the mention's last word; it must be one of the source name's words.
    return bool(mentioned_words) and mentioned_words[-1] in words


def _identity_matches(mention: CitationMention, source: Any) -> bool:
    if mention.kind == "doi":
        return bool(_source_field(source, "doi")) and normalise_doi(str(_source_field(source, "doi"))) == mention.doi
    if mention.kind == "title":
        cited, title = normalise_text(mention.title), normalise_text(str(_source_field(source, "title") or ""))
        if not cited or not title:
            return False
        if cited == title:
            return True
        return min(len(cited), len(title)) >= _MIN_TITLE_CHARS and (cited in title or title in cited)
    year = _source_field(source, "year")
    if mention.year is None or year is None or str(year).strip() != str(mention.year):
        return False
    names = _source_authors(_source_field(source, "author"))
    if not names or not mention.authors:
        return False
    first, *others = mention.authors
    # The first cited author must be the source's first author; any other named author must appear.
    return _name_matches(first, names[0]) and all(any(_name_matches(o, n) for n in names) for o in others)


def _parse_cited(cited: str) -> CitationMention:
    """Read a cited string as one mention; "Lee, 2017" (a parenthetical without its brackets) included."""
    mentions = find_citations(cited) or find_citations(f"({cited})")
    if mentions:
        return mentions[0]
    return CitationMention(cited, "title", 0, len(cited), title=cited.strip())


def check_citation(
    cited: str, sources: Iterable[Any], evidence_judgments: Iterable[JudgedEvidence]
) -> CitationCheck:
    """Check one cited work: does it exist among the sources, and does a snippet of it support the claim?

    Args:
        cited: the citation as written: "Smith et al. (2019)", "(Lee, 2017)", a DOI, "张三等（2020）",
            "《title》" or a bare title.
        sources: source records (dicts or objects) with `source_id` and optional `title`, `author`,
            `year`, `doi` (the source record of datasets/README.md).
        evidence_judgments: the claim's judged evidence.

    Returns:
        CitationCheck; `matched_source_id` is the matching source whose snippet supports the claim if
        any, else the first matching source, else None.
    """
    return _check_mention(cited, _parse_cited(cited), sources, evidence_judgments)


def _check_mention(
    cited: str, mention: CitationMention, sources: Iterable[Any], evidence_judgments: Iterable[JudgedEvidence]
) -> CitationCheck:
    matched = [str(_source_field(s, "source_id")) for s in sources if _identity_matches(mention, s)]
    if not matched:
        return CitationCheck(cited, False, False, None, f"no source matches the cited {mention.kind.replace('_', '+')}")
    supporting = {j.evidence.source_id for j in evidence_judgments if j.relation == "support"}
    for source_id in matched:
        if source_id in supporting:
            return CitationCheck(cited, True, True, source_id, f"{source_id} has a snippet supporting the claim")
    return CitationCheck(
        cited, True, False, matched[0], f"{', '.join(matched)} found, but none of its snippets supports the claim"
    )


def check_claim_citations(
    text: str, sources: Iterable[Any], evidence_judgments: Iterable[JudgedEvidence]
) -> list[CitationCheck]:
    """Find every citation in `text` and check each (see `check_citation`)."""
    sources, judged = list(sources), list(evidence_judgments)
    return [_check_mention(m.text, m, sources, judged) for m in find_citations(text)]


def claim_citation(text: str, sentence: str, sources: Sequence[Any], judged: Sequence[JudgedEvidence]
                   ) -> CitationCheck | None:
    """The check of a claim's citation: the works cited in the claim (or, if it cites none, in its source sentence),
    the worst check first (a missing work before an unsupported one); None when neither cites anything."""
    checks = check_claim_citations(text, sources, judged) or check_claim_citations(sentence, sources, judged)
    if not checks:
        return None
    return min(checks, key=lambda c: (c.identity_exists, c.content_supports))
