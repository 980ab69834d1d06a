"""Duplicate SUGGESTIONS, never identity: a preprint and its journal version carry two legal DOIs of one work, and
one DOI may sit on two records of one library. Identity stays `library_id + item_key + version` (items.ItemRef);
this module only points at pairs a person may want to merge in their own library.

A pair is suggested when the records share a DOI or an arXiv id, or when the normalised titles match, the first
authors' family names agree and the years are close; a pair of a preprint and a non-preprint says so. DOIs and titles
are normalised by the citation model the checker uses (factlab.matching.citations.normalise_doi,
factlab.schema.normalise_text); the tolerances here (similar titles, years up to 2 apart, accents folded in family
names) are looser than a citation's identity on purpose: a suggestion is a question for a person, and a preprint and
its journal version differ in year and often in a title word.

>>> arxiv_id("10.48550/arXiv.2101.00001v2"), arxiv_id("https://arxiv.org/pdf/hep-th/9901001v1"), arxiv_id("x")
('2101.00001', 'hep-th/9901001', '')
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from factlab.knowledge.items import Item, ItemRef
from factlab.matching.citations import normalise_doi
from factlab.matching.text import similarity
from factlab.schema import normalise_text

_ARXIV = re.compile(r"(?:arxiv[.:/\s]*(?:abs/|pdf/)?|arxiv\.org/(?:abs|pdf)/)"
                    r"(\d{4}\.\d{4,5}|[a-z][a-z.\-]*/\d{7})(?:v\d+)?", re.I)
# DOI prefixes of preprint servers: arXiv, SSRN, Preprints.org, Research Square, OSF, ChemRxiv; bioRxiv/medRxiv
# share 10.1101 with Cold Spring Harbor journals, so only their dated form (10.1101/2020.01.01.123456) counts.
_PREPRINT_DOI = re.compile(r"^10\.(?:48550/|2139/ssrn|20944/preprints|21203/rs\.|31219/osf|26434/chemrxiv|"
                           r"1101/\d{4}\.\d{2}\.\d{2}\.)")
_PREPRINT_VENUE = re.compile(r"\b(?:arxiv|biorxiv|medrxiv|ssrn|chemrxiv|research square|preprints?|osf)\b", re.I)
_PREPRINT_TYPES = frozenset({"preprint", "manuscript", "unpublished"})  # Zotero, CSL and BibTeX types of a preprint


def arxiv_id(text: str) -> str:
    """The arXiv id in a DOI, URL or `arXiv:` string, without its version suffix; "" when there is none.

    >>> arxiv_id("arXiv:1706.03762")
    '1706.03762'
    """
    match = _ARXIV.search(text or "")
    return match.group(1).lower() if match else ""


def family_key(name: str) -> str:
    """A family name in its comparable form: accents folded, letters and digits only, lower case.

    >>> family_key("Müller-Lüdenscheidt"), family_key("O'Brien")
    ('mullerludenscheidt', 'obrien')
    """
    folded = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in folded if ch.isalnum() and not unicodedata.combining(ch)).lower()


def years_close(a: int | None, b: int | None, max_gap: int) -> bool:
    """True when either year is unknown or they differ by at most `max_gap` (a preprint often precedes the paper).

    >>> years_close(2020, 2022, 2), years_close(2019, 2022, 2), years_close(None, 2022, 2)
    (True, False, True)
    """
    return a is None or b is None or abs(a - b) <= max_gap


def item_arxiv_id(item: Item) -> str:
    """The arXiv id from the item's DOI, URL, `extra` field or eprint field, "" when it has none."""
    eprint = item.field("eprint")
    archive = (item.field("archiveprefix") or item.field("eprinttype")).lower()
    if eprint and archive == "arxiv":
        return arxiv_id("arXiv:" + eprint)
    for text in (item.doi, item.url, item.field("extra"), item.field("arxiv"), item.venue):
        if found := arxiv_id(text):
            return found
    return ""


def is_preprint(item: Item) -> bool:
    """True when the item looks like a preprint: a preprint server's DOI or venue, a preprint item type, or an arXiv
    id with neither a venue nor another DOI."""
    if _PREPRINT_DOI.match(normalise_doi(item.doi)) or _PREPRINT_VENUE.search(item.venue):
        return True
    if item.item_type.lower() in _PREPRINT_TYPES:
        return True
    return bool(item_arxiv_id(item)) and not item.venue and not item.doi


@dataclass(frozen=True)
class DuplicateSuggestion:
    """Two items that may be one work; `reasons` says why (never merged by factlab)."""

    a: ItemRef
    b: ItemRef
    reasons: tuple[str, ...]
    score: float


def _title_reasons(x: Item, y: Item, min_title: float, max_year_gap: int) -> tuple[list[str], float]:
    tx, ty = normalise_text(x.title), normalise_text(y.title)
    if not tx or not ty:
        return [], 0.0
    score = 1.0 if tx == ty else similarity(tx, ty)
    if score < min_title or not years_close(x.year, y.year, max_year_gap):
        return [], 0.0
    fx = family_key(x.authors[0].family) if x.authors else ""
    fy = family_key(y.authors[0].family) if y.authors else ""
    if fx and fy and fx != fy:
        return [], 0.0
    if not (fx and fy) and tx != ty:  # without both authors only an exact title is enough
        return [], 0.0
    reasons = ["same title" if tx == ty else f"similar title ({score:.2f})"]
    reasons += ["same first author"] if fx and fy else []
    reasons += [f"years {x.year} and {y.year}"] if x.year and y.year and x.year != y.year else []
    return reasons, score


def suggest_duplicates(items: Iterable[Item], min_title: float = 0.9, max_year_gap: int = 2
                       ) -> list[DuplicateSuggestion]:
    """Pairs of items that may be one work, strongest first.

    Args:
        items: the items to compare (one library or several).
        min_title: title similarity (factlab.matching.text.similarity on normalised titles) that counts as a match;
            0.9 tolerates a changed subtitle word or punctuation, not a different paper.
        max_year_gap: years a preprint may precede its journal version.
    """
    items = list(items)
    buckets: dict[tuple[str, str], list[int]] = defaultdict(list)  # only items sharing a bucket are compared
    for index, item in enumerate(items):
        if doi := normalise_doi(item.doi):
            buckets[("doi", doi)].append(index)
        if arxiv := item_arxiv_id(item):
            buckets[("arxiv", arxiv)].append(index)
        if item.authors and (family := family_key(item.authors[0].family)):
            buckets[("author", family)].append(index)
        if title := normalise_text(item.title):
            buckets[("title", title)].append(index)
    found: dict[tuple[int, int], tuple[list[str], float]] = {}
    for (kind, value), members in buckets.items():
        for i, j in combinations(members, 2):
            reasons, score = found.get((i, j), ([], 0.0))
            if kind == "doi":
                reasons, score = [*reasons, "same DOI"], 1.0
            elif kind == "arxiv":
                reasons, score = [*reasons, f"same arXiv id {value}"], 1.0
            elif not any("title" in reason for reason in reasons):
                title_reasons, title_score = _title_reasons(items[i], items[j], min_title, max_year_gap)
                reasons, score = reasons + title_reasons, max(score, title_score)
            if reasons:
                found[(i, j)] = (reasons, score)
    suggestions = []
    for (i, j), (reasons, score) in found.items():
        x, y = items[i], items[j]
        if is_preprint(x) != is_preprint(y):
            reasons = [*reasons, "preprint and journal version"]
        a, b = sorted((x.ref, y.ref))
        suggestions.append(DuplicateSuggestion(a, b, tuple(dict.fromkeys(reasons)), round(score, 3)))
    return sorted(suggestions, key=lambda s: (-s.score, s.a, s.b))
